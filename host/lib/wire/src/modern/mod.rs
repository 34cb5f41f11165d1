//! MCP 2026-07-28, the stateless revision, as facts shared by both transports: the `_meta`
//! envelope every request carries and its checks, the error codes, `server/discover`, and the
//! result fields only a modern client gets.
//!
//! Invariants: the envelope is read from each request alone (nothing is inferred from an
//! earlier one); the checks run in the order the specification and the official SDK use
//! (required keys, then the HTTP headers, then the version), so a client hears of its first
//! mistake; nothing here is ever added to a 2025 answer.

pub mod state;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::rpc::{self, json_string};

/// Built once: building a searcher costs more than searching a short text with it.
static VERSION_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(VERSION_KEY.as_bytes()));

/// The modern versions we serve, newest last.
pub const VERSIONS: &[&str] = &["2026-07-28"];
/// The version Core MCP speaks as a client when the server offers it.
pub const VERSION: &str = "2026-07-28";

pub(crate) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
pub const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// An HTTP header disagrees with the body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability it did not declare.
pub(crate) const MISSING_CAPABILITY: i64 = -32021;
/// The request's protocol version is not one we serve.
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;

/// How long a client may keep a list or discovery result: 0, since ours change with reloads,
/// upstream servers and dynamic groups, and a change is announced on `subscriptions/listen`.
const TTL_MS: u64 = 0;

/// A request refused by the envelope checks: a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i64,
    pub message: String,
    /// `error.data` as JSON text.
    pub data: Option<String>,
}

impl Refusal {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error message for request `id`.
    pub fn to_message(&self, id: Option<&str>) -> String {
        error_with_data(id, self.code, &self.message, self.data.as_deref())
    }
}

/// `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE,"data":DATA}}`.
pub fn error_with_data(id: Option<&str>, code: i64, message: &str, data: Option<&str>) -> String {
    match data {
        None => rpc::error(id, code, message),
        Some(data) => format!(
            "{}{},\"error\":{{\"code\":{code},\"message\":{},\"data\":{data}}}}}",
            rpc::ID_PREFIX,
            id.unwrap_or("null"),
            json_string(message)
        ),
    }
}

/// What a modern request says about its client, read from its `params._meta`.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    pub version: String,
    /// The client declared `elicitation` (form mode, the default) in this request.
    pub can_elicit: bool,
    /// `io.modelcontextprotocol/logLevel`: the least severe log level it wants, if any.
    pub log_level: Option<String>,
    /// `io.modelcontextprotocol/clientInfo` as sent (JSON text), when given.
    client: Option<String>,
    /// The client declared the tasks extension (`crate::tasks::EXTENSION`) in this request:
    /// only then may a `tools/call` be answered with a task.
    pub tasks: bool,
    /// `params.name`, `params.uri` and `params.taskId`, as strings, for the `Mcp-Name` check.
    name: Option<String>,
    uri: Option<String>,
    task_id: Option<String>,
}

impl Envelope {
    /// `params.name` of the request, when it is a string.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// `name version` of the client, when it said.
    pub fn client(&self) -> Option<String> {
        let info: ClientInfo = serde_json::from_str(self.client.as_deref()?).ok()?;
        crate::client_name::label(&info.name?, info.version.as_deref())
    }
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

/// `params` read with its `_meta` in one pass (the common, well-formed case).
#[derive(Deserialize)]
struct WithMeta<'a> {
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<Meta<'a>>,
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "taskId")]
    task_id: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "io.modelcontextprotocol/clientInfo")]
    client: Option<&'a RawValue>,
    #[serde(default, rename = "io.modelcontextprotocol/logLevel")]
    log_level: Option<String>,
}

#[derive(Deserialize)]
struct ClientInfo {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Deserialize)]
struct Capabilities<'a> {
    #[serde(borrow, default)]
    elicitation: Option<&'a RawValue>,
}

/// Whether a request is of the modern era: its `params._meta` carries the protocol-version key
/// (not merely a `_meta`; pitfall 4 of the summary).
pub fn is_tagged(params: Option<&RawValue>) -> bool {
    let Some(params) = params else { return false };
    if VERSION_FINDER.find(params.get().as_bytes()).is_none() {
        return false;
    }
    serde_json::from_str::<Params<'_>>(params.get())
        .ok()
        .and_then(|p| p.meta)
        .and_then(|m| serde_json::from_str::<Meta<'_>>(m.get()).ok())
        .is_some_and(|m| m.version.is_some())
}

/// The first rung: `params._meta` is an object with both required keys. The version is checked
/// later ([`check_version`]), after the HTTP headers.
pub fn envelope(params: Option<&RawValue>) -> Result<Envelope, Refusal> {
    let missing = || {
        Refusal::new(
            rpc::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying the required \"{VERSION_KEY}\" and \
                 \"{CAPABILITIES_KEY}\" keys (MCP 2026-07-28 sends them with every request)"
            ),
        )
    };
    let params = params.ok_or_else(missing)?;
    let (meta, name, uri, task_id) = match serde_json::from_str::<WithMeta<'_>>(params.get()) {
        Ok(WithMeta {
            meta: Some(meta),
            name,
            uri,
            task_id,
        }) => (meta, name, uri, task_id),
        Ok(WithMeta { meta: None, .. }) => return Err(missing()),
        // Say which: `_meta` is not an object, or one of its keys has the wrong type.
        Err(e) => {
            let raw = serde_json::from_str::<Params<'_>>(params.get())
                .ok()
                .and_then(|p| p.meta);
            return Err(match raw {
                Some(meta) if meta.get().starts_with('{') => Refusal::new(
                    rpc::INVALID_PARAMS,
                    format!("params._meta has a key of the wrong type: {e}"),
                ),
                _ => missing(),
            });
        }
    };
    let absent: Vec<&str> = [
        (meta.version.is_none(), VERSION_KEY),
        (meta.capabilities.is_none(), CAPABILITIES_KEY),
    ]
    .into_iter()
    .filter_map(|(absent, key)| absent.then_some(key))
    .collect();
    if !absent.is_empty() {
        return Err(Refusal::new(
            rpc::INVALID_PARAMS,
            format!(
                "params._meta is missing the required key(s): {}",
                absent.join(", ")
            ),
        ));
    }
    let version = meta.version.map(RawValue::get).unwrap_or_default();
    let version: String = serde_json::from_str(version).map_err(|_| {
        Refusal::new(
            rpc::INVALID_PARAMS,
            format!("\"{VERSION_KEY}\" must be a string, not {version}"),
        )
    })?;
    let capabilities = meta.capabilities.map(RawValue::get).unwrap_or("{}");
    if !capabilities.starts_with('{') {
        return Err(Refusal::new(
            rpc::INVALID_PARAMS,
            format!("\"{CAPABILITIES_KEY}\" must be an object, not {capabilities}"),
        ));
    }
    // Most requests declare nothing: only look closer when the word is there.
    /// Built once: every 2026 request's capabilities are looked at.
    static ELICITATION: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"elicitation\""));
    let elicitation = match ELICITATION.find(capabilities.as_bytes()) {
        None => None,
        Some(_) => serde_json::from_str::<Capabilities<'_>>(capabilities)
            .ok()
            .and_then(|c| c.elicitation),
    };
    // Built once, as the one above.
    static TASKS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(concat!("\"", "io.modelcontextprotocol/tasks", "\""))
        });
    let tasks = TASKS.find(capabilities.as_bytes()).is_some() && declares_tasks(capabilities);
    Ok(Envelope {
        version,
        tasks,
        // `{}` is form mode; an object naming only `url` cannot show our form.
        can_elicit: elicitation.is_some_and(|e| {
            let text = e.get();
            text.starts_with('{') && (text.contains("\"form\"") || !text.contains("\"url\""))
        }),
        log_level: meta.log_level,
        client: meta.client.map(|c| c.get().to_owned()),
        name: name.map(|n| n.into_owned()),
        uri: uri.map(|u| u.into_owned()),
        task_id: task_id.map(|t| t.into_owned()),
    })
}

/// Whether capabilities (an object's JSON text) declare the tasks extension, read without
/// building a value of them (`crate::tasks::declared` says the same of a built one).
fn declares_tasks(capabilities: &str) -> bool {
    #[derive(Deserialize)]
    struct Caps<'a> {
        #[serde(borrow, default)]
        extensions: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Extensions<'a> {
        #[serde(borrow, default, rename = "io.modelcontextprotocol/tasks")]
        tasks: Option<&'a RawValue>,
    }
    serde_json::from_str::<Caps<'_>>(capabilities)
        .ok()
        .and_then(|c| c.extensions)
        .and_then(|e| serde_json::from_str::<Extensions<'_>>(e.get()).ok())
        .and_then(|e| e.tasks)
        .is_some_and(|t| t.get() != "null")
}

/// The last rung: the envelope's version is one we serve, else -32022 with what we support.
pub fn check_version(envelope: &Envelope) -> Result<(), Refusal> {
    if VERSIONS.contains(&envelope.version.as_str()) {
        return Ok(());
    }
    Err(unsupported(&envelope.version))
}

/// -32022 for `requested`.
pub fn unsupported(requested: &str) -> Refusal {
    Refusal {
        code: UNSUPPORTED_VERSION,
        message: format!(
            "unsupported protocol version {requested:?}: this server speaks {} per request \
             (and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 through initialize)",
            VERSIONS.join(", ")
        ),
        data: Some(format!(
            "{{\"supported\":{},\"requested\":{}}}",
            serde_json::Value::from(VERSIONS.to_vec()),
            json_string(requested)
        )),
    }
}

/// -32021: the request needs `capability`, which it did not declare.
pub fn missing_capability(capability: &str, why: &str) -> Refusal {
    Refusal {
        code: MISSING_CAPABILITY,
        message: format!(
            "this request needs the client capability \"{capability}\", which its \
             \"{CAPABILITIES_KEY}\" does not declare: {why}"
        ),
        data: Some(format!(
            "{{\"requiredCapabilities\":{{{}:{{}}}}}}",
            json_string(capability)
        )),
    }
}

/// -32021: the request needs the extension `extension` (for one, tasks), which it did not
/// declare.
pub fn missing_extension(extension: &str, why: &str) -> Refusal {
    Refusal {
        code: MISSING_CAPABILITY,
        message: format!(
            "this request needs the extension \"{extension}\", which its \"{CAPABILITIES_KEY}\" \
             does not declare under \"extensions\": {why}"
        ),
        data: Some(format!(
            "{{\"requiredCapabilities\":{{\"extensions\":{{{}:{{}}}}}}}}",
            json_string(extension)
        )),
    }
}

/// The routing headers of a modern HTTP request, as received.
#[derive(Debug, Default)]
pub struct Headers<'h> {
    pub version: Option<&'h str>,
    pub method: Option<&'h str>,
    pub name: Option<&'h str>,
    /// A routing header sent more than once.
    pub duplicated: Option<&'static str>,
}

/// The second rung, on HTTP: `MCP-Protocol-Version`, `Mcp-Method` and (for the methods that
/// name something) `Mcp-Name` agree with the body, after `=?base64?…?=` decoding.
pub fn check_headers(
    headers: &Headers<'_>,
    method: &str,
    envelope: &Envelope,
) -> Result<(), Refusal> {
    let mismatch = |what: String| Refusal::new(HEADER_MISMATCH, what);
    if let Some(name) = headers.duplicated {
        return Err(mismatch(format!(
            "the {name} header is sent more than once"
        )));
    }
    if headers.version.map(str::trim) != Some(envelope.version.as_str()) {
        return Err(mismatch(format!(
            "the MCP-Protocol-Version header ({}) does not match \"{VERSION_KEY}\" of the body \
             ({})",
            headers.version.unwrap_or("absent"),
            envelope.version
        )));
    }
    if headers.method.map(str::trim) != Some(method) {
        return Err(mismatch(format!(
            "the Mcp-Method header ({}) does not match the body's method ({method})",
            headers.method.unwrap_or("absent")
        )));
    }
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(()),
    };
    let named = match key {
        "name" => envelope.name.as_deref(),
        "uri" => envelope.uri.as_deref(),
        _ => envelope.task_id.as_deref(),
    };
    let Some(value) = named else { return Ok(()) };
    if headers.name.and_then(decode_header_value).as_deref() != Some(value) {
        return Err(mismatch(format!(
            "the Mcp-Name header ({}) does not match the body's {key} ({value:?})",
            headers.name.unwrap_or("absent")
        )));
    }
    Ok(())
}

/// A header value as sent: verbatim, or the UTF-8 text inside `=?base64?…?=` (canonical base64
/// only, so one value has one spelling); `None` for a malformed sentinel.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine as _;
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(value.to_owned());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(payload).ok()?;
    if engine.encode(&bytes) != payload {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The HTTP status of a modern answer with this JSON-RPC error code (200 for a result).
pub fn http_status(code: Option<i64>) -> u16 {
    match code {
        Some(
            rpc::PARSE_ERROR
            | rpc::INVALID_REQUEST
            | rpc::INVALID_PARAMS
            | HEADER_MISMATCH
            | MISSING_CAPABILITY
            | UNSUPPORTED_VERSION,
        ) => 400,
        Some(rpc::METHOD_NOT_FOUND) => 404,
        _ => 200,
    }
}

/// The `server/discover` result; `surface`: upstream servers are configured, so their
/// prompts and resources are served.
pub fn discover_result(instructions: &str, surface: bool) -> String {
    format!(
        concat!(
            "{{\"resultType\":\"complete\",\"supportedVersions\":{},",
            "\"capabilities\":{},",
            "\"instructions\":{},\"ttlMs\":{},\"cacheScope\":\"private\",",
            "\"_meta\":{{\"{}\":{{\"name\":\"coremcp\",\"title\":\"Core MCP\",\"version\":{}}}}}}}"
        ),
        serde_json::Value::from(VERSIONS.to_vec()),
        discover_capabilities(surface),
        json_string(instructions),
        TTL_MS,
        SERVER_INFO_KEY,
        json_string(env!("CARGO_PKG_VERSION")),
    )
}

/// The capabilities `server/discover` lists: those of `initialize`, and the extensions served
/// per request (tasks).
fn discover_capabilities(surface: bool) -> String {
    let base = crate::mcp::capabilities(surface);
    let inner = base.strip_suffix('}').unwrap_or(base);
    format!(
        "{inner},\"extensions\":{{\"{}\":{{}}}}}}",
        crate::tasks::EXTENSION
    )
}

/// Whether a `server/discover` result names a version we speak per request (the test both
/// our clients — of upstream servers and of other Core MCPs — make of a peer).
pub fn offers_modern(discovered: &serde_json::Value) -> bool {
    discovered["supportedVersions"]
        .as_array()
        .is_some_and(|offered| {
            offered
                .iter()
                .any(|v| v.as_str().is_some_and(|v| VERSIONS.contains(&v)))
        })
}

/// The method of the 2026 probe: a server that answers it naming 2026-07-28 among its
/// `supportedVersions` ([`offers_modern`]) is spoken to sessionless; any other answer means
/// `initialize` and a session. Every client of ours probes with it (`discover_params`).
pub const DISCOVER: &str = "server/discover";

/// The params of the [`DISCOVER`] probe: no arguments, the envelope.
pub fn discover_params() -> serde_json::Value {
    with_envelope(serde_json::json!({}), None)
}

/// `params` with the 2026 envelope in its `_meta` (keys already there are kept; the
/// capabilities are `capabilities`, or none).
pub fn with_envelope(
    mut params: serde_json::Value,
    capabilities: Option<serde_json::Value>,
) -> serde_json::Value {
    if !params.is_object() {
        params = serde_json::json!({});
    }
    let meta = &mut params["_meta"];
    if !meta.is_object() {
        *meta = serde_json::json!({});
    }
    let entries = [
        (VERSION_KEY, serde_json::json!(VERSION)),
        (
            CAPABILITIES_KEY,
            capabilities.unwrap_or_else(|| serde_json::json!({})),
        ),
        (
            CLIENT_INFO_KEY,
            serde_json::json!({"name": "coremcp", "title": "Core MCP", "version": env!("CARGO_PKG_VERSION")}),
        ),
    ];
    if let Some(meta) = meta.as_object_mut() {
        for (key, value) in entries {
            meta.entry(key).or_insert(value);
        }
    }
    params
}

/// A list result (an object's JSON text) with the caching fields a modern client needs.
pub fn cacheable(result: &str) -> String {
    let body = result.strip_prefix('{').unwrap_or(result);
    let sep = if body.starts_with('}') { "" } else { "," };
    format!("{{\"ttlMs\":{TTL_MS},\"cacheScope\":\"private\"{sep}{body}")
}

/// An answer of ours with its id replaced by `id` (JSON text); other messages unchanged.
pub fn with_id(message: String, id: &str) -> String {
    match rpc::id_end(&message) {
        Some(end) => {
            let mut out = String::with_capacity(message.len() + id.len());
            out.push_str(rpc::ID_PREFIX);
            out.push_str(id);
            out.push_str(&message[end..]);
            out
        }
        None => message,
    }
}

/// A successful answer of ours with `resultType: "complete"` added when the result has none
/// (an `input_required` result is built with its own); errors and notifications unchanged.
pub fn completed(message: String) -> String {
    const RESULT: &str = ",\"result\":{";
    let Some(end) = rpc::id_end(&message) else {
        return message;
    };
    if !message[end..].starts_with(RESULT) {
        return message;
    }
    let at = end + RESULT.len();
    if message[at..].starts_with("\"resultType\"") {
        return message;
    }
    let sep = if message[at..].starts_with('}') {
        ""
    } else {
        ","
    };
    let mut out = String::with_capacity(message.len() + 32);
    out.push_str(&message[..at]);
    out.push_str("\"resultType\":\"complete\"");
    out.push_str(sep);
    out.push_str(&message[at..]);
    out
}

/// The JSON-RPC error code of one of our answers, if it is an error.
pub fn error_code(message: &str) -> Option<i64> {
    const ERROR: &str = ",\"error\":{\"code\":";
    let end = rpc::id_end(message)?;
    let rest = message[end..].strip_prefix(ERROR)?;
    let len = rest
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'-'))?;
    rest[..len].parse().ok()
}

/// A notification with `_meta` naming the subscription `id` (JSON text) added to its params.
pub fn tagged_notification(method: &str, id: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{{\"_meta\":{{\"{SUBSCRIPTION_KEY}\":{id}}}}}}}",
        json_string(method)
    )
}

/// The filter of a `subscriptions/listen` request, as far as we serve it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
}

/// The most task ids one `subscriptions/listen` may ask for.
pub const MAX_LISTENED_TASKS: usize = 100;

/// What `subscriptions/listen` asks for, as read.
#[derive(Deserialize, Default)]
struct Asked {
    #[serde(default, rename = "toolsListChanged")]
    tools: Option<bool>,
    #[serde(default, rename = "promptsListChanged")]
    prompts: Option<bool>,
    #[serde(default, rename = "resourcesListChanged")]
    resources: Option<bool>,
    #[serde(default, rename = "taskIds")]
    task_ids: Option<Vec<String>>,
}

fn listen_asked(params: Option<&RawValue>) -> Result<Asked, Refusal> {
    #[derive(Deserialize)]
    struct Listen {
        #[serde(default)]
        notifications: Option<Asked>,
    }
    let Some(params) = params else {
        return Ok(Asked::default());
    };
    let listen: Listen = serde_json::from_str(params.get())
        .map_err(|e| Refusal::new(rpc::INVALID_PARAMS, format!("subscriptions/listen: {e}")))?;
    Ok(listen.notifications.unwrap_or_default())
}

/// Reads the filter of `subscriptions/listen`; the types we do not serve are left out of the
/// acknowledgment.
pub fn listen_filter(params: Option<&RawValue>) -> Result<Filter, Refusal> {
    let asked = listen_asked(params)?;
    Ok(Filter {
        tools: asked.tools.unwrap_or(false),
        prompts: asked.prompts.unwrap_or(false),
        resources: asked.resources.unwrap_or(false),
    })
}

/// The task ids `subscriptions/listen` asks `notifications/tasks` for (tasks extension).
pub fn listen_task_ids(params: Option<&RawValue>) -> Result<Vec<String>, Refusal> {
    let ids = listen_asked(params)?.task_ids.unwrap_or_default();
    if ids.len() > MAX_LISTENED_TASKS {
        return Err(Refusal::new(
            rpc::INVALID_PARAMS,
            format!(
                "subscriptions/listen: {} taskIds; at most {MAX_LISTENED_TASKS} in one subscription",
                ids.len()
            ),
        ));
    }
    Ok(ids)
}

/// `notifications/tasks` with the whole state of a task (`detailed`, an object), for
/// subscription `id`.
pub fn task_notification(id: &str, detailed: &serde_json::Value) -> String {
    let mut params = detailed.clone();
    if let Some(map) = params.as_object_mut() {
        map.remove("resultType");
        let tag: serde_json::Value = serde_json::from_str(id).unwrap_or_default();
        map.insert("_meta".into(), serde_json::json!({ SUBSCRIPTION_KEY: tag }));
    }
    serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params})
        .to_string()
}

/// `notifications/subscriptions/acknowledged` for subscription `id` with what we grant (the
/// task ids `tasks`, when any).
pub fn acknowledged(id: &str, filter: Filter, tasks: &[String]) -> String {
    let task_ids = (!tasks.is_empty())
        .then(|| format!("\"taskIds\":{}", serde_json::Value::from(tasks.to_vec())));
    let granted: Vec<&str> = [
        (filter.tools, "\"toolsListChanged\":true"),
        (filter.prompts, "\"promptsListChanged\":true"),
        (filter.resources, "\"resourcesListChanged\":true"),
        (task_ids.is_some(), task_ids.as_deref().unwrap_or_default()),
    ]
    .into_iter()
    .filter_map(|(on, text)| on.then_some(text))
    .collect();
    let granted = format!("{{{}}}", granted.join(","));
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{{\"_meta\":{{\"{SUBSCRIPTION_KEY}\":{id}}},\"notifications\":{granted}}}}}"
    )
}

/// The graceful end of subscription `id`: its `complete` answer.
pub fn listen_ended(id: &str) -> String {
    rpc::response(
        id,
        &format!("{{\"resultType\":\"complete\",\"_meta\":{{\"{SUBSCRIPTION_KEY}\":{id}}}}}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).expect("json")
    }

    #[test]
    fn the_envelope_needs_both_keys_and_reads_capabilities_per_request() {
        let ok = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},
                "io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
                "io.modelcontextprotocol/logLevel":"info"}}"#,
        );
        let env = envelope(Some(&ok)).expect("valid");
        assert!(env.can_elicit);
        assert_eq!(env.log_level.as_deref(), Some("info"));
        assert_eq!(env.client().as_deref(), Some("c 1"));
        assert!(check_version(&env).is_ok());
        let no_caps = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        let e = envelope(Some(&no_caps)).expect_err("missing");
        assert_eq!(e.code, rpc::INVALID_PARAMS);
        assert!(e.message.contains(CAPABILITIES_KEY), "{}", e.message);
        assert!(envelope(None).is_err());
        assert!(envelope(Some(&raw(r#"{"_meta":5}"#))).is_err());
        let url_only = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}}"#,
        );
        assert!(!envelope(Some(&url_only)).expect("valid").can_elicit);
        assert!(!env.tasks, "tasks are never assumed");
        let tasks = raw(
            r#"{"taskId":"t_1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"extensions":
                    {"io.modelcontextprotocol/tasks":{}}}}}"#,
        );
        let tasks = envelope(Some(&tasks)).expect("valid");
        assert!(tasks.tasks);
        assert_eq!(tasks.task_id.as_deref(), Some("t_1"));
        // The name elsewhere (an argument, another capability's value) declares nothing.
        let elsewhere = raw(
            r#"{"arguments":{"x":"io.modelcontextprotocol/tasks"},"_meta":{
                "io.modelcontextprotocol/protocolVersion":"2026-07-28",
                "io.modelcontextprotocol/clientCapabilities":{"x":"\"io.modelcontextprotocol/tasks\""}}}"#,
        );
        assert!(!envelope(Some(&elsewhere)).expect("valid").tasks);
        let number = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7,
                "io.modelcontextprotocol/clientCapabilities":{}}}"#);
        assert_eq!(
            envelope(Some(&number)).expect_err("number").code,
            rpc::INVALID_PARAMS
        );
    }

    #[test]
    fn an_unknown_version_names_what_is_supported() {
        let env = Envelope {
            version: "2099-01-01".into(),
            ..Envelope::default()
        };
        let e = check_version(&env).expect_err("unsupported");
        assert_eq!(e.code, UNSUPPORTED_VERSION);
        let data: serde_json::Value =
            serde_json::from_str(e.data.as_deref().expect("data")).expect("json");
        assert_eq!(data["supported"][0], "2026-07-28");
        assert_eq!(data["requested"], "2099-01-01");
    }

    #[test]
    fn the_era_key_is_the_version_not_meta_alone() {
        assert!(!is_tagged(Some(&raw(r#"{"_meta":{"progressToken":1}}"#))));
        assert!(is_tagged(Some(&raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}"#
        ))));
        // The key's text elsewhere (an argument) is not the marker.
        assert!(!is_tagged(Some(&raw(
            r#"{"arguments":{"k":"io.modelcontextprotocol/protocolVersion"}}"#
        ))));
        assert!(!is_tagged(None));
    }

    #[test]
    fn answers_get_result_type_and_keep_their_ids() {
        assert_eq!(
            completed(rpc::response("1", "{}")),
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#
        );
        assert_eq!(
            completed(rpc::response(r#""a\"b""#, r#"{"x":1}"#)),
            r#"{"jsonrpc":"2.0","id":"a\"b","result":{"resultType":"complete","x":1}}"#
        );
        let input = rpc::response("2", r#"{"resultType":"input_required"}"#);
        assert_eq!(completed(input.clone()), input);
        let error = rpc::error(Some("3"), -32602, "no");
        assert_eq!(completed(error.clone()), error);
        assert_eq!(error_code(&error), Some(-32602));
        assert_eq!(error_code(&rpc::response("3", "{}")), None);
        let note = rpc::notification("n", "{}");
        assert_eq!(completed(note.clone()), note);
        assert_eq!(
            with_id(rpc::response("\"~7\"", "{}"), "1"),
            rpc::response("1", "{}")
        );
        assert_eq!(rpc::answer_id(&rpc::response("-12", "{}")), Some("-12"));
        assert_eq!(cacheable("{}"), r#"{"ttlMs":0,"cacheScope":"private"}"#);
        assert_eq!(
            cacheable(r#"{"tools":[]}"#),
            r#"{"ttlMs":0,"cacheScope":"private","tools":[]}"#
        );
    }

    #[test]
    fn headers_must_agree_with_the_body() {
        let env = Envelope {
            version: "2026-07-28".into(),
            name: Some("café tool".into()),
            ..Envelope::default()
        };
        let good = Headers {
            version: Some("2026-07-28"),
            method: Some("tools/call"),
            name: Some("=?base64?Y2Fmw6kgdG9vbA==?="),
            duplicated: None,
        };
        assert!(check_headers(&good, "tools/call", &env).is_ok());
        let cases = [
            Headers {
                version: None,
                ..Headers { ..good }
            },
            Headers {
                version: Some("2025-06-18"),
                ..Headers { ..good }
            },
            Headers {
                method: Some("tools/list"),
                ..Headers { ..good }
            },
            Headers {
                method: None,
                ..Headers { ..good }
            },
            Headers {
                name: Some("other"),
                ..Headers { ..good }
            },
            Headers {
                name: None,
                ..Headers { ..good }
            },
            Headers {
                name: Some("=?base64?Y2Fmw6kgdG9vbA=?="),
                ..Headers { ..good }
            },
            Headers {
                duplicated: Some("Mcp-Method"),
                ..Headers { ..good }
            },
        ];
        for headers in cases {
            let e = check_headers(&headers, "tools/call", &env).expect_err("mismatch");
            assert_eq!(e.code, HEADER_MISMATCH, "{headers:?}");
        }
        // A method that names nothing needs no Mcp-Name.
        let list = Headers {
            method: Some("tools/list"),
            name: None,
            ..Headers { ..good }
        };
        assert!(check_headers(&list, "tools/list", &env).is_ok());
        // A task request names its task in Mcp-Name.
        let task = Envelope {
            version: "2026-07-28".into(),
            task_id: Some("t_0a".into()),
            ..Envelope::default()
        };
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let named = |name| Headers {
                version: Some("2026-07-28"),
                method: Some(method),
                name,
                duplicated: None,
            };
            assert!(
                check_headers(&named(Some("t_0a")), method, &task).is_ok(),
                "{method}"
            );
            for name in [None, Some("t_0b")] {
                let wrong = named(name);
                let e = check_headers(&wrong, method, &task).expect_err(method);
                assert!(e.message.contains("taskId"), "{}", e.message);
            }
        }
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(http_status(Some(-32601)), 404);
        assert_eq!(http_status(Some(-32022)), 400);
        assert_eq!(http_status(Some(-32603)), 200);
        assert_eq!(http_status(None), 200);
    }

    #[test]
    fn discovery_and_subscription_messages_are_json() {
        let d: serde_json::Value =
            serde_json::from_str(&discover_result("hi", true)).expect("json");
        assert_eq!(d["resultType"], "complete");
        assert_eq!(d["supportedVersions"][0], "2026-07-28");
        assert_eq!(d["_meta"][SERVER_INFO_KEY]["name"], "coremcp");
        assert!(d["capabilities"]["extensions"][crate::tasks::EXTENSION].is_object());
        assert!(d["capabilities"]["tools"]["listChanged"].as_bool() == Some(true));
        for text in [
            tagged_notification("notifications/tools/list_changed", "\"s\""),
            acknowledged(
                "4",
                Filter {
                    tools: true,
                    prompts: true,
                    resources: false,
                },
                &[],
            ),
            acknowledged("5", Filter::default(), &["t_1".to_owned()]),
            task_notification(
                "5",
                &serde_json::json!({"resultType": "complete", "taskId": "t_1"}),
            ),
            listen_ended("4"),
            missing_capability("elicitation", "why").to_message(Some("1")),
            missing_extension(crate::tasks::EXTENSION, "why").to_message(Some("1")),
        ] {
            serde_json::from_str::<serde_json::Value>(&text).expect(&text);
        }
        let ack: serde_json::Value =
            serde_json::from_str(&acknowledged("5", Filter::default(), &["t_1".to_owned()]))
                .expect("json");
        assert_eq!(
            ack["params"]["notifications"],
            serde_json::json!({"taskIds": ["t_1"]})
        );
        let note: serde_json::Value = serde_json::from_str(&task_notification(
            "\"s\"",
            &serde_json::json!({"resultType": "complete", "taskId": "t_1", "status": "completed"}),
        ))
        .expect("json");
        assert_eq!(note["params"]["_meta"][SUBSCRIPTION_KEY], "s");
        assert!(note["params"].get("resultType").is_none());
        assert_eq!(note["params"]["status"], "completed");
        let raw = |s: &str| RawValue::from_string(s.to_owned()).expect("json");
        assert_eq!(
            listen_task_ids(Some(&raw(r#"{"notifications":{"taskIds":["t_1","t_2"]}}"#)))
                .expect("ids"),
            ["t_1", "t_2"]
        );
        assert!(listen_task_ids(Some(&raw(r#"{"notifications":{"taskIds":[1]}}"#))).is_err());
        let many = serde_json::json!({"notifications": {"taskIds": vec!["t"; 101]}});
        assert!(listen_task_ids(Some(&raw(&many.to_string()))).is_err());
        let data = missing_extension(crate::tasks::EXTENSION, "why").data;
        let data: serde_json::Value = serde_json::from_str(&data.expect("data")).expect("json");
        assert!(data["requiredCapabilities"]["extensions"][crate::tasks::EXTENSION].is_object());
    }
}
