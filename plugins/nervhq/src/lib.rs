//! The NervHQ store (being built).
