//! The MCP sessions of one `coremcp serve`: created by `initialize`, found by their
//! `Mcp-Session-Id`, ended by DELETE (or by idling out).
//!
//! Each session is a transport-independent [`Session`] whose outbox is the session's own
//! [`Router`], and records its [`Principal`] for grant checks.
//!
//! Invariants:
//! - A session id is 16 bytes from `/dev/urandom`, in hex: unguessable, and never reused.
//! - An ended session is gone from the table at once: its id answers 404 from then on.
//! - No principal holds more than its limit of sessions ([`MAX_SESSIONS_PER_PRINCIPAL`]): at
//!   the limit, *its own* least recently active idle session (no request in flight, no GET
//!   stream) is ended to make room; if none of its sessions is idle, the new one is refused.
//!   One principal never ends another's session, so a token holder opening sessions in a loop
//!   only ever evicts its own. Principals are the token names (or `local`), so the table is
//!   bounded by the tokens file. A session idle for [`IDLE_LIMIT`] is ended by
//!   [`Sessions::reap`].

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::session::Session;
use coremcp_engine::PluginSet;
use coremcp_upstream::hub::Upstreams;
use coremcp_wire::policy::Caller;

use super::auth::Principal;
use super::outbox::Router;

/// Sessions one principal keeps at most.
pub const MAX_SESSIONS_PER_PRINCIPAL: usize = 256;
/// A session with no request in flight and no GET stream is ended after this long.
pub const IDLE_LIMIT: Duration = Duration::from_secs(60 * 60);

/// Why a session could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error(
        "too many sessions for {principal} ({limit}), all of them active: end one (DELETE /mcp) \
         or retry later"
    )]
    Full { principal: Principal, limit: usize },
    #[error("cannot read /dev/urandom for a session id: {0}")]
    Entropy(#[from] std::io::Error),
}

/// One HTTP MCP session.
pub struct HttpSession {
    id: String,
    principal: Principal,
    session: Session,
    router: Arc<Router>,
    last_active: Mutex<Instant>,
    /// The client asked for log messages (`logging/setLevel`).
    wants_logs: AtomicBool,
}

impl HttpSession {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Who opened the session: the token's NAME, or `local` without tokens.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn router(&self) -> &Arc<Router> {
        &self.router
    }

    /// Records that the client asked for log messages.
    pub fn note_logging(&self) {
        self.wants_logs.store(true, Ordering::Relaxed);
    }

    /// Whether the client asked for log messages.
    pub fn wants_logs(&self) -> bool {
        self.wants_logs.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_since(&self) -> Option<Instant> {
        (!self.router.busy()).then(|| {
            *self
                .last_active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        })
    }
}

/// The session table.
pub struct Sessions {
    config: Config,
    plugins: Arc<PluginSet>,
    upstreams: Arc<Upstreams>,
    table: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// The one sessionless (2026-07-28) session of each principal.
    modern: Mutex<HashMap<Principal, Arc<HttpSession>>>,
    /// Numbers the requests of the sessionless sessions, whose ids they replace.
    modern_seq: std::sync::atomic::AtomicU64,
    limit: usize,
}

impl Sessions {
    pub fn new(config: Config, plugins: Arc<PluginSet>, upstreams: Arc<Upstreams>) -> Self {
        Self::with_limit(config, plugins, upstreams, MAX_SESSIONS_PER_PRINCIPAL)
    }

    pub fn with_limit(
        config: Config,
        plugins: Arc<PluginSet>,
        upstreams: Arc<Upstreams>,
        limit: usize,
    ) -> Self {
        Self {
            config,
            plugins,
            upstreams,
            table: Mutex::new(HashMap::new()),
            modern: Mutex::new(HashMap::new()),
            modern_seq: std::sync::atomic::AtomicU64::new(0),
            limit: limit.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a session for `principal`.
    pub fn create(&self, principal: Principal) -> Result<Arc<HttpSession>, CreateError> {
        let id = random_id()?;
        let mut table = self.lock();
        let own = table.values().filter(|s| s.principal == principal);
        if own.clone().count() >= self.limit {
            let evict = own
                .filter_map(|s| s.idle_since().map(|at| (at, s.id.clone())))
                .min()
                .map(|(_, id)| id)
                .ok_or_else(|| CreateError::Full {
                    principal: principal.clone(),
                    limit: self.limit,
                })?;
            if let Some(old) = table.remove(&evict) {
                tracing::info!(session = %short(&old.id), principal = %principal, "session limit reached; ended this principal's least recently active idle session");
                old.router.close();
            }
        }
        let router = Arc::new(Router::new());
        let session = Session::new(
            self.config.clone(),
            Arc::clone(&self.plugins),
            Arc::clone(&self.upstreams),
            caller_of(&principal),
            Arc::clone(&router) as Arc<dyn crate::session::Outbox>,
        );
        let created = Arc::new(HttpSession {
            id: id.clone(),
            principal,
            session,
            router,
            last_active: Mutex::new(Instant::now()),
            wants_logs: AtomicBool::new(false),
        });
        table.insert(id, Arc::clone(&created));
        tracing::info!(session = %short(&created.id), principal = %created.principal, "session created");
        Ok(created)
    }

    /// The sessionless session of `principal`, through which all its 2026 requests go (made
    /// on its first; kept while the server runs — principals are bounded by the tokens file).
    pub fn modern(&self, principal: &Principal) -> Arc<HttpSession> {
        let mut table = self.modern.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = table.get(principal) {
            return Arc::clone(found);
        }
        let router = Arc::new(Router::new());
        let session = Session::with_era(
            self.config.clone(),
            Arc::clone(&self.plugins),
            Arc::clone(&self.upstreams),
            caller_of(principal),
            Arc::clone(&router) as Arc<dyn crate::session::Outbox>,
            crate::session::era::Era::Modern,
        );
        let created = Arc::new(HttpSession {
            id: format!("2026:{principal}"),
            principal: principal.clone(),
            session,
            router,
            last_active: Mutex::new(Instant::now()),
            wants_logs: AtomicBool::new(false),
        });
        table.insert(principal.clone(), Arc::clone(&created));
        tracing::info!(principal = %principal, "first 2026-07-28 request of this principal");
        created
    }

    /// A new id for a request of a sessionless session (JSON text, unique in the process), so
    /// that two clients of one principal that use the same ids never meet.
    pub fn modern_request_id(&self) -> String {
        let n = self
            .modern_seq
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("\"~{n}\"")
    }

    /// The session with this id, marked active.
    pub fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let found = self.lock().get(id).cloned();
        if let Some(session) = &found {
            session.touch();
        }
        found
    }

    /// Ends a session; false if there was none with that id.
    pub fn end(&self, id: &str) -> bool {
        let removed = self.lock().remove(id);
        match removed {
            Some(session) => {
                session.router.close();
                tracing::info!(session = %short(id), "session ended");
                true
            }
            None => false,
        }
    }

    /// Ends the sessions idle for longer than `limit`; how many.
    pub fn reap(&self, limit: Duration) -> usize {
        let now = Instant::now();
        let mut table = self.lock();
        let stale: Vec<String> = table
            .values()
            .filter(|s| {
                s.idle_since()
                    .is_some_and(|at| now.saturating_duration_since(at) > limit)
            })
            .map(|s| s.id.clone())
            .collect();
        for id in &stale {
            if let Some(session) = table.remove(id) {
                session.router.close();
                tracing::info!(session = %short(id), "session ended after idling");
            }
        }
        stale.len()
    }

    /// Every live session, the sessionless ones included.
    pub fn all(&self) -> Vec<Arc<HttpSession>> {
        let mut all: Vec<Arc<HttpSession>> = self.lock().values().cloned().collect();
        all.extend(
            self.modern
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .cloned(),
        );
        all
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// The policy's caller for a principal.
fn caller_of(principal: &Principal) -> Caller {
    match principal {
        Principal::Local => Caller::Anonymous,
        Principal::Token(name) => Caller::Token(name.clone()),
        Principal::Signed {
            issuer,
            name,
            scopes,
        } => Caller::Signed {
            issuer: std::sync::Arc::clone(issuer),
            name: name.clone(),
            scopes: scopes.clone(),
        },
    }
}

/// The first characters of a session id, enough to tell sessions apart in a log.
pub(crate) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// 16 random bytes from /dev/urandom, as 32 lowercase hex digits.
pub fn random_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(limit: usize) -> (crate::http::tests::Scratch, Sessions) {
        let scratch = crate::http::tests::Scratch::new();
        let config = Config::with_plugins(scratch.path().to_owned());
        let plugins = Arc::new(PluginSet::discover(&config.engine()).expect("discover"));
        (
            scratch,
            Sessions::with_limit(config, plugins, Upstreams::none(), limit),
        )
    }

    #[test]
    fn ids_are_random_hex() {
        let a = random_id().expect("urandom");
        let b = random_id().expect("urandom");
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn create_find_end() {
        let (_dir, sessions) = sessions(4);
        let s = sessions
            .create(Principal::Token("ci".into()))
            .expect("created");
        assert_eq!(s.principal().to_string(), "ci");
        assert!(sessions.get(s.id()).is_some());
        assert!(sessions.end(s.id()));
        assert!(sessions.get(s.id()).is_none());
        assert!(!sessions.end(s.id()));
    }

    #[test]
    fn the_limit_evicts_an_idle_session_and_refuses_when_all_are_busy() {
        let (_dir, sessions) = sessions(2);
        let first = sessions.create(Principal::Local).expect("1");
        let second = sessions.create(Principal::Local).expect("2");
        let _stream = second.router().listen().expect("busy: a GET stream");
        let third = sessions
            .create(Principal::Local)
            .expect("evicts the idle one");
        assert!(sessions.get(first.id()).is_none(), "the idle one went");
        assert!(sessions.get(second.id()).is_some());
        let _waiting = third
            .router()
            .expect("1", false, None)
            .expect("busy: a request");
        assert!(matches!(
            sessions.create(Principal::Local),
            Err(CreateError::Full { limit: 2, .. })
        ));
    }

    #[test]
    fn one_principal_never_ends_anothers_sessions() {
        let (_dir, sessions) = sessions(2);
        let theirs = sessions
            .create(Principal::Token("victim".into()))
            .expect("victim");
        let attacker = Principal::Token("attacker".into());
        let mut mine = Vec::new();
        for _ in 0..20 {
            mine.push(sessions.create(attacker.clone()).expect("evicts its own"));
        }
        assert!(
            sessions.get(theirs.id()).is_some(),
            "the victim's idle session lives"
        );
        assert_eq!(sessions.len(), 3);
        // With every one of its sessions busy, the attacker is refused, naming it…
        let last = mine.pop().expect("last");
        let before = mine.pop().expect("before");
        let _a = last.router().listen().expect("busy");
        let _b = before.router().listen().expect("busy");
        let err = match sessions.create(attacker) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("refused"),
        };
        assert!(
            err.starts_with("too many sessions for attacker (2)"),
            "{err}"
        );
        // …and the victim can still open another.
        sessions
            .create(Principal::Token("victim".into()))
            .expect("the victim has room");
        assert!(sessions.get(theirs.id()).is_some());
    }

    #[test]
    fn idle_sessions_are_reaped() {
        let (_dir, sessions) = sessions(4);
        let idle = sessions.create(Principal::Local).expect("idle");
        let busy = sessions.create(Principal::Local).expect("busy");
        let _stream = busy.router().listen().expect("open");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sessions.reap(Duration::from_millis(10)), 1);
        assert!(sessions.get(idle.id()).is_none());
        assert!(sessions.get(busy.id()).is_some());
        assert_eq!(sessions.len(), 1);
    }
}
