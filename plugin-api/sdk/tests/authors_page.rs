//! The complete group that `docs/plugin-authors.md` shows is `examples/greet.rs`, which cargo
//! builds and tests with this crate: the page cannot show code that does not compile or pass.

#[test]
fn the_page_shows_the_example_as_it_is() {
    let page = include_str!("../../../docs/plugin-authors.md");
    let start = page.find("```rust\n").expect("the page has a rust block") + "```rust\n".len();
    let end = start + page[start..].find("```").expect("the block ends");
    assert!(
        page[start..end] == *include_str!("../examples/greet.rs"),
        "docs/plugin-authors.md's group and plugin-api/sdk/examples/greet.rs differ: change both"
    );
    assert!(
        page[start..end].lines().count() < 100,
        "the whole group stays under 100 lines"
    );
}
