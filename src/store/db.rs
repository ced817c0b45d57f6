//! The database handle every room shares, and what differs between SQLite and PostgreSQL:
//! opening a pool, binding a list of names (or a few lists read as one table), how a claim
//! keeps two claimers off the same rows, and how replicas starting together keep out of each
//! other's migrations.
//!
//! Placeholders do not differ: every statement is written with `$1`, `$2`, …, which PostgreSQL
//! reads natively and sqlx's SQLite driver binds by their number.
//!
//! - **Claims.** SQLite has one writer at a time: a claim runs inside `BEGIN IMMEDIATE`, so the
//!   write lock is taken before its select and no two claims (in this process or another on the
//!   same file) can pick the same rows. PostgreSQL claims with `FOR UPDATE SKIP LOCKED`: replicas
//!   claiming at the same moment skip each other's rows instead of waiting on them or taking them
//!   twice.
//! - **Lists.** The tools a claim skips are bound as a JSON array read with `json_each` on
//!   SQLite, and as a `text[]` compared with `<> ALL` on PostgreSQL.
//! - **Serialized steps.** A check and a write that must be one step (a booking's budget
//!   reservation, a client's cap on active watches or waiting notices) run under `BEGIN
//!   IMMEDIATE` on SQLite and under a transaction-scoped advisory lock on PostgreSQL
//!   ([`Db::execute_serialized`]).
//! - **Limits.** A bound `LIMIT` is written `LIMIT CAST($n AS BIGINT)`. The SQLite that
//!   libsqlite3-sys bundles (3.51; 3.40 did not) lets its planner read the value of a bare
//!   placeholder after `LIMIT`, so every new binding expires the statement and its next run
//!   compiles it again: the pollers' claims were compiled again on every poll, most of an idle
//!   gateway's CPU (BENCHMARKS.md). The cast keeps the value out of the plan; PostgreSQL reads
//!   it the same. A test keeps every statement to it.
//! - **Migrations.** PostgreSQL replicas take an advisory lock around a migration run; SQLite
//!   runs it inside `BEGIN IMMEDIATE`, its one-writer lock (see `migrate.rs`).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions, Postgres};
use sqlx::query::Query;
use sqlx::sqlite::{
    Sqlite, SqliteArguments, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions,
};
use sqlx::{ColumnIndex, Connection, Database, Decode, PgPool, Row, SqlSafeStr, SqlitePool, Type};

use super::StoreError;

/// The connection pool of the configured database; the one place that knows which it is. Cheap
/// to clone: every room (jobs, and whatever else keeps state) shares the one pool.
#[derive(Debug, Clone)]
pub enum Db {
    /// One file, WAL, nothing to install: the embedded default.
    Sqlite(SqlitePool),
    /// One queue shared by a fleet of gateway replicas.
    Postgres {
        /// The pool.
        pool: PgPool,
        /// The schema every statement runs in, when set here rather than by the URL (tests use
        /// one each); migrations create it.
        schema: Option<String>,
        /// The schema the statements do run in, read from the server at open (this `schema`,
        /// or the URL's `search_path`, or the default): notifications carry it, so fleets in
        /// different schemas of one database never hear each other.
        scope: String,
    },
}

/// A value bound to a statement parameter; the n-th value is `$n`.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// Text, or NULL.
    Text(Option<&'a str>),
    /// A 64-bit integer, or NULL.
    Int(Option<i64>),
    /// A list of names, read by the clause [`Db::excluding`] writes, or a column of
    /// [`Db::zipped`].
    Names(&'a [String]),
    /// A list of 64-bit integers, a column of [`Db::zipped`].
    Ints(&'a [i64]),
}

/// A row of either database, read as the statements need it: text and 64-bit integers.
pub trait StoreRow {
    /// A text column, or NULL.
    fn text(&self, column: &str) -> Result<Option<String>, StoreError>;
    /// An integer column, or NULL.
    fn int(&self, column: &str) -> Result<Option<i64>, StoreError>;
}

impl<R> StoreRow for R
where
    R: Row,
    for<'c> &'c str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(column)?)
    }

    fn int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.try_get(column)?)
    }
}

/// Turns one row into a value.
pub type Decoder<T> = fn(&dyn StoreRow) -> Result<T, StoreError>;

/// SQLite's code for a file it cannot open or create.
const SQLITE_CANTOPEN: &str = "14";

/// Driver errors stay in the implementation: the store interface reports text.
///
/// A refusal by the database is told in the database's own words: its message, PostgreSQL's
/// hint when it gives one, and the error's code, e.g. ``the database refused: role "gw" does not
/// exist (code 28000)``. sqlx's own wording adds "error returned from database" and the line of
/// the PostgreSQL server's C source that raised the error (`at line 768`), which tells an
/// operator nothing. PostgreSQL's detail is left out: it can quote a row's values (`Key
/// (id)=(…) already exists`), and these texts reach logs and error answers.
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        let sqlx::Error::Database(refusal) = &e else {
            return StoreError(e.to_string());
        };
        let mut text = format!("the database refused: {}", refusal.message());
        if let Some(hint) = refusal
            .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .and_then(|pg| pg.hint())
        {
            text.push_str("; hint: ");
            text.push_str(hint);
        }
        if let Some(code) = refusal.code() {
            text.push_str(&format!(" (code {code})"));
        }
        StoreError(text)
    }
}

impl Db {
    /// Whether no statement runs: every connection of the pool is idle. Tests on a paused
    /// clock wait for it before they move the clock on.
    #[cfg(test)]
    pub(crate) fn is_quiet(&self) -> bool {
        match self {
            Db::Sqlite(pool) => pool.num_idle() == pool.size() as usize,
            Db::Postgres { pool, .. } => pool.num_idle() == pool.size() as usize,
        }
    }

    /// Opens (creating when missing) the SQLite database at a `sqlite://path` or
    /// `sqlite::memory:` URL.
    pub async fn open_sqlite(url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError(format!("bad SQLite URL {url}: {e}")))?;
        Db::sqlite_pool(options).await
    }

    /// Opens (creating when missing) the SQLite file at `path`, whatever characters it holds.
    pub async fn open_sqlite_file(path: &std::path::Path) -> Result<Self, StoreError> {
        Db::sqlite_pool(SqliteConnectOptions::new().filename(path))
            .await
            .map_err(|e| StoreError(format!("{}: {}", path.display(), e.0)))
    }

    async fn sqlite_pool(options: SqliteConnectOptions) -> Result<Self, StoreError> {
        let file = options.get_filename().display().to_string();
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10));
        // No ping before each acquire: it guards against a server that hung up, and a SQLite
        // connection is a thread of this process over a local file. The ping was a round trip
        // to that thread for every statement of every poller (BENCHMARKS.md: idle wake-ups).
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(|e| {
                let cannot_open = matches!(
                    &e,
                    sqlx::Error::Database(refusal) if refusal.code().as_deref() == Some(SQLITE_CANTOPEN)
                );
                let mut e = StoreError::from(e);
                if cannot_open {
                    e.0.push_str(&format!(
                        ": the directory of {file} must exist and be writable by this user (SQLite creates the file and its -wal and -shm files beside it)"
                    ));
                }
                e
            })?;
        Ok(Db::Sqlite(pool))
    }

    /// Connects to a `postgres://` URL. With `schema`, every statement runs in that schema
    /// (created when missing): tests use one schema each so they never see each other's rows.
    pub async fn open_postgres(url: &str, schema: Option<&str>) -> Result<Self, StoreError> {
        let mut options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError(format!("bad PostgreSQL URL: {e}")))?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(StoreError(format!(
                    "schema name {schema:?} must be [A-Za-z0-9_]"
                )));
            }
            options = options.options([("search_path", schema)]);
        }
        // Replicas told apart in `pg_stat_activity` (unless the URL names the application
        // itself), and the server's NOTICEs ("relation … already exists, skipping" on every
        // start's idempotent migrations) kept out of the log: warnings and errors still come.
        if options.get_application_name().is_none() {
            options = options.application_name(&format!("faregate/{}", std::process::id()));
        }
        options = options.options([("client_min_messages", "warning")]);
        first_connection(&options).await?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        let scope = match schema {
            Some(schema) => schema.to_string(),
            // `current_schema()` is NULL while the search path names no schema that exists yet.
            None => {
                sqlx::query_scalar::<_, String>(
                    "SELECT COALESCE(current_schema(), current_setting('search_path'))",
                )
                .fetch_one(&pool)
                .await?
            }
        };
        Ok(Db::Postgres {
            pool,
            schema: schema.map(str::to_string),
            scope,
        })
    }

    /// The condition "`column` is not one of the names bound at `param`" (an [`Arg::Names`]).
    pub fn excluding(&self, column: &str, param: &str) -> String {
        match self {
            Db::Sqlite(_) => format!("{column} NOT IN (SELECT value FROM json_each({param}))"),
            Db::Postgres { .. } => format!("{column} <> ALL({param})"),
        }
    }

    /// A table whose n-th row holds the n-th value of each list bound at the `columns`'
    /// parameters (`(param, column, type)`, the lists of one length, `type` `TEXT` for an
    /// [`Arg::Names`] and `BIGINT` for an [`Arg::Ints`]), named `alias`: for a statement that
    /// joins a few rows the caller holds, such as a claim's clients' shares.
    pub fn zipped(&self, alias: &str, columns: &[(&str, &str, &str)]) -> String {
        match self {
            // `json_each` reads each list; its rows are matched by their place in the lists.
            Db::Sqlite(_) => {
                let values = columns
                    .iter()
                    .enumerate()
                    .map(|(n, (_, column, _))| format!("l{n}.value AS {column}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let lists = columns
                    .iter()
                    .enumerate()
                    .map(|(n, (param, _, _))| match n {
                        0 => format!("json_each({param}) AS l0"),
                        _ => format!("JOIN json_each({param}) AS l{n} ON l{n}.key = l0.key"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                format!("(SELECT {values} FROM {lists}) AS {alias}")
            }
            Db::Postgres { .. } => {
                let lists = columns
                    .iter()
                    .map(|(param, _, ty)| format!("CAST({param} AS {ty}[])"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let names = columns
                    .iter()
                    .map(|(_, column, _)| *column)
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("unnest({lists}) AS {alias}({names})")
            }
        }
    }

    /// What ends a claim's select of `table`'s rows so concurrent claimers take different rows
    /// (only `table`'s: the select may join a ranking of them, which cannot be locked).
    pub fn claim_lock(&self, table: &str) -> String {
        match self {
            // The transaction's BEGIN IMMEDIATE does it (see `claim`).
            Db::Sqlite(_) => String::new(),
            Db::Postgres { .. } => format!("FOR UPDATE OF {table} SKIP LOCKED"),
        }
    }

    /// Runs a statement and decodes the rows it returns.
    pub async fn fetch<T>(
        &self,
        sql: impl SqlSafeStr,
        args: &[Arg<'_>],
        decode: impl Fn(&dyn StoreRow) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Db::Sqlite(pool) => decode_all(&sqlite_query(sql, args).fetch_all(pool).await?, decode),
            Db::Postgres { pool, .. } => {
                decode_all(&pg_query(sql, args).fetch_all(pool).await?, decode)
            }
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub async fn execute(&self, sql: impl SqlSafeStr, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        Ok(match self {
            Db::Sqlite(pool) => sqlite_query(sql, args).execute(pool).await?.rows_affected(),
            Db::Postgres { pool, .. } => pg_query(sql, args).execute(pool).await?.rows_affected(),
        })
    }

    /// Runs a claim (an `UPDATE … RETURNING` of rows picked by a select) so that concurrent
    /// claimers take different rows, and decodes what it took. SQLite needs a transaction that
    /// takes its one-writer lock first; on PostgreSQL the statement is its own transaction and
    /// its select's `FOR UPDATE … SKIP LOCKED` ([`Db::claim_lock`]) keeps claimers apart, so an
    /// explicit `BEGIN`/`COMMIT` would only add two round trips to every claim (an idle
    /// replica's most frequent statements).
    pub async fn claim<T>(
        &self,
        sql: impl SqlSafeStr,
        args: &[Arg<'_>],
        decode: impl Fn(&dyn StoreRow) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Db::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let rows = sqlite_query(sql, args).fetch_all(&mut *tx).await?;
                tx.commit().await?;
                decode_all(&rows, &decode)
            }
            Db::Postgres { pool, .. } => {
                decode_all(&pg_query(sql, args).fetch_all(pool).await?, &decode)
            }
        }
    }
}

impl Db {
    /// Runs a statement that must see every earlier statement run under the same `lock` and
    /// none that runs after (a check and a write in one step, such as a budget reservation):
    /// SQLite takes its one-writer lock first (`BEGIN IMMEDIATE`); PostgreSQL takes the
    /// transaction-scoped advisory lock `lock`, so statements under other locks still run side
    /// by side. The number of rows it changed.
    pub async fn execute_serialized(
        &self,
        lock: i64,
        sql: impl SqlSafeStr,
        args: &[Arg<'_>],
    ) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let changed = sqlite_query(sql, args)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                tx.commit().await?;
                Ok(changed)
            }
            Db::Postgres { pool, .. } => {
                let mut tx = pool.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(lock)
                    .execute(&mut *tx)
                    .await?;
                let changed = pg_query(sql, args).execute(&mut *tx).await?.rows_affected();
                tx.commit().await?;
                Ok(changed)
            }
        }
    }
}

fn decode_all<R: StoreRow, T>(
    rows: &[R],
    decode: impl Fn(&dyn StoreRow) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    rows.iter().map(|row| decode(row)).collect()
}

fn sqlite_query<'a>(sql: impl SqlSafeStr, args: &[Arg<'a>]) -> Query<'a, Sqlite, SqliteArguments> {
    args.iter().fold(sqlx::query(sql), |query, arg| match *arg {
        Arg::Text(value) => query.bind(value),
        Arg::Int(value) => query.bind(value),
        // `json_each` reads the list; a list of strings always serializes.
        Arg::Names(names) => {
            query.bind(serde_json::to_string(names).unwrap_or_else(|_| "[]".into()))
        }
        // Integers always serialize too.
        Arg::Ints(ints) => query.bind(serde_json::to_string(ints).unwrap_or_else(|_| "[]".into())),
    })
}

fn pg_query<'a>(
    sql: impl SqlSafeStr,
    args: &[Arg<'a>],
) -> Query<'a, Postgres, <Postgres as Database>::Arguments> {
    args.iter().fold(sqlx::query(sql), |query, arg| match *arg {
        Arg::Text(value) => query.bind(value),
        Arg::Int(value) => query.bind(value),
        Arg::Names(names) => query.bind(names),
        Arg::Ints(ints) => query.bind(ints),
    })
}

/// How long the first connection to PostgreSQL may take before the gateway gives up starting.
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// One connection before the pool: a pool that cannot connect says only that it timed out
/// waiting, after its whole wait, where one connection says why at once (connection refused, no
/// such host). The database's own refusals (an unknown role, a missing database) read as
/// every store error does.
async fn first_connection(options: &PgConnectOptions) -> Result<(), StoreError> {
    let at = format!("{}:{}", options.get_host(), options.get_port());
    match tokio::time::timeout(CONNECT_WAIT, PgConnection::connect_with(options)).await {
        Ok(Ok(connection)) => {
            let _ = connection.close().await;
            Ok(())
        }
        Ok(Err(sqlx::Error::Io(e))) => Err(StoreError(format!(
            "cannot reach PostgreSQL at {at}: {e}; check that it runs there and that the URL's host and port are right"
        ))),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(StoreError(format!(
            "PostgreSQL at {at} did not answer within {} s; check that it runs there and that the URL's host and port are right",
            CONNECT_WAIT.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{Db, StoreError};

    /// A refusal reads as the database's words and code, without sqlx's wrapping.
    #[tokio::test]
    async fn a_refusal_is_told_in_the_databases_words() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = Db::open_sqlite_file(&dir.path().join("t.db"))
            .await
            .expect("a SQLite file opens");
        let StoreError(text) = db
            .execute("SELECT * FROM no_such_table", &[])
            .await
            .expect_err("no such table");
        assert_eq!(
            text,
            "the database refused: no such table: no_such_table (code 1)"
        );
        let missing = dir.path().join("no-such-dir").join("t.db");
        let StoreError(text) = Db::open_sqlite_file(&missing)
            .await
            .expect_err("a file in a missing directory");
        assert!(
            text.contains("unable to open database file (code 14): the directory of")
                && text.contains("no-such-dir/t.db must exist and be writable by this user"),
            "{text}"
        );

        let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
            eprintln!(
                "note: a_refusal_is_told_in_the_databases_words: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
            );
            return;
        };
        let mut stranger = reqwest::Url::parse(&url).expect("the test URL parses");
        stranger
            .set_username("faregate_no_such_role")
            .expect("a URL with a user");
        let StoreError(text) = Db::open_postgres(stranger.as_str(), None)
            .await
            .expect_err("an unknown role");
        assert_eq!(
            text,
            "the database refused: role \"faregate_no_such_role\" does not exist (code 28000)"
        );
    }

    /// A PostgreSQL that is not there is said at once, with where the gateway looked and what
    /// to check, not after the pool's whole wait as "pool timed out".
    #[tokio::test]
    async fn a_postgres_nobody_listens_on_is_said_at_once() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let url = format!("postgres://faregate@127.0.0.1:{port}/faregate");
        let StoreError(text) = Db::open_postgres(&url, None)
            .await
            .expect_err("nothing listens there");
        assert!(
            text.starts_with(&format!("cannot reach PostgreSQL at 127.0.0.1:{port}: "))
                && text.contains("refused")
                && text.contains("host and port"),
            "{text}"
        );
    }

    /// A replica's connections carry its name in `pg_stat_activity`, and the server's notices
    /// (an idempotent migration's "already exists, skipping") stay out of its log.
    #[tokio::test]
    async fn connections_are_named_and_hear_no_notices() {
        let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
            eprintln!(
                "note: connections_are_named_and_hear_no_notices skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
            );
            return;
        };
        let db = Db::open_postgres(&url, None)
            .await
            .expect("PostgreSQL opens");
        let settings = db
            .fetch(
                "SELECT current_setting('application_name') AS name, current_setting('client_min_messages') AS level",
                &[],
                |row| Ok((row.text("name")?, row.text("level")?)),
            )
            .await
            .expect("the settings read");
        let (name, level) = settings.into_iter().next().expect("one row");
        assert_eq!(name, Some(format!("faregate/{}", std::process::id())));
        assert_eq!(level.as_deref(), Some("warning"));
        // A URL naming the application keeps it.
        let named = format!(
            "{url}{}application_name=billing",
            if url.contains('?') { '&' } else { '?' }
        );
        let db = Db::open_postgres(&named, None)
            .await
            .expect("PostgreSQL opens");
        let name = db
            .fetch(
                "SELECT current_setting('application_name') AS name",
                &[],
                |row| row.text("name"),
            )
            .await
            .expect("the setting reads");
        assert_eq!(name, vec![Some("billing".to_string())]);
    }

    /// Every `.rs` file under `dir`, with its text.
    fn sources(dir: &Path, found: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file is UTF-8");
                found.push((path.display().to_string(), text));
            }
        }
    }

    #[test]
    fn no_statement_binds_a_bare_limit() {
        // A bare bound LIMIT makes SQLite compile the statement again on every run (module
        // docs, "Limits"). The pattern is built so that this file does not match itself.
        let bare = ["LIMIT", " $"].concat();
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 50, "found only {} source files", files.len());
        let offenders: Vec<String> = files
            .iter()
            .flat_map(|(path, text)| {
                text.lines()
                    .enumerate()
                    .filter(|(_, line)| line.contains(&bare))
                    .map(move |(n, line)| format!("{path}:{}: {}", n + 1, line.trim()))
            })
            .collect();
        assert!(
            offenders.is_empty(),
            "write LIMIT CAST($n AS BIGINT) instead:\n{}",
            offenders.join("\n")
        );
    }
}
