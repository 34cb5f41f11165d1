//! The rmcp servers `scripts/bench` measures Core MCP against: one tool, `echo`, which answers
//! its arguments as JSON text (what the fixture plugin's `fixture_echo` does).
//!
//! usage: rmcp-baseline stdio          rmcp over `stdio_pipes` on a current-thread runtime
//!        rmcp-baseline http ADDR      rmcp's Streamable HTTP server, stateless, JSON answers

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({"type": "object"});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!("an object literal")
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Return the arguments as given.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        Ok(CallToolResult::success(vec![ContentBlock::text(args.to_string())]).into())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["stdio"] => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(stdio()),
        ["http", addr] => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
            .block_on(http(addr)),
        _ => Err("usage: rmcp-baseline stdio | rmcp-baseline http ADDR".into()),
    }
}

async fn stdio() -> Result<(), Box<dyn std::error::Error>> {
    let server = Echo.serve(rmcp::transport::io::stdio_pipes()).await?;
    server.waiting().await?;
    Ok(())
}

async fn http(addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.sse_keep_alive = None;
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}
