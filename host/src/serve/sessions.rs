//! MCP sessions kept in the shared database, so that a client whose requests a load
//! balancer sends to another node goes on with its session there (rmcp replays the
//! stored `initialize` on the node that has not seen it). Clients of the current
//! protocol (2026-07-28) have no sessions and need nothing of this.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};

use crate::storage::Pg;

/// The sessions in PostgreSQL.
#[derive(Debug)]
pub struct PgSessions(pub Arc<Pg>);

#[async_trait::async_trait]
impl SessionStore for PgSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let id = session_id.to_owned();
        let state: Option<String> = self
            .0
            .run_async(move |client| async move {
                let row = client
                    .query_opt("SELECT state FROM mcp_sessions WHERE id = $1", &[&id])
                    .await?;
                Ok(row.map(|r| r.get(0)))
            })
            .await?;
        Ok(state.map(|s| serde_json::from_str(&s)).transpose()?)
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let (id, state) = (session_id.to_owned(), serde_json::to_string(state)?);
        let now = i64::try_from(crate::unix_millis()).unwrap_or(i64::MAX);
        self.0
            .run_async(move |client| async move {
                client
                    .execute(
                        "INSERT INTO mcp_sessions (id, state, updated_at) VALUES ($1, $2, $3)
                         ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                             updated_at = excluded.updated_at",
                        &[&id, &state, &now],
                    )
                    .await
                    .map(drop)
            })
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let id = session_id.to_owned();
        self.0
            .run_async(move |client| async move {
                client
                    .execute("DELETE FROM mcp_sessions WHERE id = $1", &[&id])
                    .await
                    .map(drop)
            })
            .await?;
        Ok(())
    }
}
