//! The shared database's schema, as numbered migrations ([`super::Pg::migrate`] applies
//! them).

/// Schema changes, in order; entry `i` moves the database from version `i` to `i + 1`.
/// Released entries are never edited, only appended to.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: statistics and the call history (as evo.db's `skill_stats` and `tool_history`).
    "CREATE TABLE skill_stats (
        skill TEXT PRIMARY KEY,
        call_count BIGINT NOT NULL,
        success_count BIGINT NOT NULL,
        total_duration_ms DOUBLE PRECISION NOT NULL,
        max_duration_ms DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE tool_history (
        id BIGSERIAL PRIMARY KEY,
        at_ms BIGINT NOT NULL,
        caller TEXT NOT NULL,
        task_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL,
        duration_ms DOUBLE PRECISION NOT NULL,
        error TEXT
    );
    CREATE INDEX tool_history_tool ON tool_history (tool, id);
    CREATE INDEX tool_history_at ON tool_history (at_ms);",
    // 2: memory (as memory.db), with a keyword index, and a log of changed entries that
    // nodes catch up from (announced on the `evo_memory` channel).
    "CREATE TABLE memory_entries (
        rowid BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        superseded_by TEXT,
        model TEXT NOT NULL,
        embedding BYTEA NOT NULL,
        tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
    );
    CREATE INDEX memory_entries_tsv ON memory_entries USING GIN (tsv);
    CREATE INDEX memory_entries_source ON memory_entries (source);
    CREATE INDEX memory_entries_superseded ON memory_entries (superseded_by);
    CREATE TABLE memory_decisions (
        rowid BIGSERIAL PRIMARY KEY,
        at BIGINT NOT NULL,
        action TEXT NOT NULL,
        entry TEXT NOT NULL,
        supersedes TEXT,
        text TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    CREATE INDEX memory_decisions_entry ON memory_decisions (entry);
    CREATE INDEX memory_decisions_supersedes ON memory_decisions (supersedes);
    CREATE TABLE memory_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE memory_log_files (
        day TEXT PRIMARY KEY,
        len BIGINT NOT NULL,
        mtime BIGINT NOT NULL,
        digest TEXT NOT NULL,
        bullets BIGINT NOT NULL
    );
    CREATE TABLE memory_changes (seq BIGSERIAL PRIMARY KEY, entry BIGINT NOT NULL);
    CREATE FUNCTION memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memory_changes (entry)
            VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.rowid ELSE NEW.rowid END);
        PERFORM pg_notify('evo_memory', '');
        RETURN NULL;
    END $$;
    CREATE TRIGGER memory_entries_changed AFTER INSERT OR UPDATE OR DELETE ON memory_entries
        FOR EACH ROW EXECUTE FUNCTION memory_changed();",
    // 3: the catalogue: packages by digest, stored once, and what is installed under
    // each name (announced on the `evo_catalogue` channel).
    "CREATE TABLE packages (
        digest TEXT PRIMARY KEY,
        bytes BYTEA NOT NULL,
        stored_at BIGINT NOT NULL
    );
    CREATE TABLE installs (
        name TEXT PRIMARY KEY,
        digest TEXT NOT NULL REFERENCES packages (digest),
        record TEXT NOT NULL,
        installed_at BIGINT NOT NULL
    );
    CREATE FUNCTION catalogue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('evo_catalogue', '');
        RETURN NULL;
    END $$;
    CREATE TRIGGER installs_changed AFTER INSERT OR UPDATE OR DELETE ON installs
        FOR EACH STATEMENT EXECUTE FUNCTION catalogue_changed();",
    // 4: MCP sessions (legacy protocol versions), so any node can serve a session
    // another node started.
    "CREATE TABLE mcp_sessions (
        id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at BIGINT NOT NULL
    );",
    // 5: the keyword index updated as entries are written: with `fastupdate`, new
    // entries wait in a pending list that every search scans (0.5 ms per term at 100k
    // entries after an import, against 0.02 ms).
    "ALTER INDEX memory_entries_tsv SET (fastupdate = off);",
    // 6: which node made a call, and the error's hint (for the console's history).
    "ALTER TABLE tool_history ADD COLUMN node TEXT NOT NULL DEFAULT '';
    ALTER TABLE tool_history ADD COLUMN hint TEXT;",
    // 7: what each `evo serve` node is running, written every few seconds, so any
    // node's console shows every node's gauges.
    "CREATE TABLE serve_nodes (node TEXT PRIMARY KEY, seen_ms BIGINT NOT NULL, gauges TEXT NOT NULL);",
    // 8: each skill's own grants, as a node changed them over the wire (announced on
    // the catalogue's channel): the entry's `[grants]` keys and values as JSON, or
    // NULL where the entry was removed.
    "CREATE TABLE skill_grants (name TEXT PRIMARY KEY, entry TEXT, changed_at BIGINT NOT NULL);
    CREATE TRIGGER skill_grants_changed AFTER INSERT OR UPDATE OR DELETE ON skill_grants
        FOR EACH STATEMENT EXECUTE FUNCTION catalogue_changed();",
    // 9: the console's sign-in sessions, so a browser signed in on one node is on every
    // node with the same tokens: the session id's SHA-256, the token's fingerprint (a
    // session of a token the nodes no longer have is over), when it expires.
    "CREATE TABLE console_sessions (id TEXT PRIMARY KEY, token TEXT NOT NULL, expires_ms BIGINT NOT NULL);",
];
