//! Listening for notifications on a connection of its own: how a node hears that
//! another committed a change (memory, the catalogue).
//!
//! Needs the `postgres` feature of evo-host (on by default).

use std::sync::Arc;
use std::time::Duration;

use super::Pg;
use super::pg::error;

/// What a listening connection heard on one channel: a count of notifications, and
/// whether it is listening now. While it is not (before the first `LISTEN`, after the
/// connection dropped), callers ask the database directly instead of trusting silence.
#[derive(Debug, Default)]
pub struct Notices {
    heard: std::sync::atomic::AtomicU64,
    live: std::sync::atomic::AtomicBool,
}

impl Notices {
    /// Notifications heard so far (plus one each time listening started or stopped,
    /// so that a caller looks again after any gap).
    pub fn heard(&self) -> u64 {
        self.heard.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether a connection is listening now.
    pub fn live(&self) -> bool {
        self.live.load(std::sync::atomic::Ordering::Acquire)
    }

    fn bump(&self) {
        self.heard.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    fn set_live(&self, live: bool) {
        self.live.store(live, std::sync::atomic::Ordering::Release);
        self.bump();
    }
}

/// How long a listener waits before connecting again after its connection dropped.
pub const RELISTEN_AFTER: Duration = Duration::from_secs(1);

/// A task listening on a channel; stops when dropped.
#[derive(Debug)]
pub struct Listening {
    notices: Arc<Notices>,
    task: tokio::task::AbortHandle,
}

impl Listening {
    /// What it heard.
    pub fn notices(&self) -> &Notices {
        &self.notices
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Pg {
    /// Listens on `channel` on a connection of its own (outside the pool), connecting
    /// again whenever it drops.
    pub fn listen(&self, channel: &'static str) -> Listening {
        let notices = Arc::new(Notices::default());
        let heard = notices.clone();
        let config = self.config.clone();
        let tls = self.tls.clone();
        let url = self.url.clone();
        let task = self.handle().spawn(async move {
            loop {
                if let Err(e) = listen_once(&config, &tls, channel, &heard).await {
                    tracing::warn!("{}", error(&url, &e));
                }
                heard.set_live(false);
                tokio::time::sleep(RELISTEN_AFTER).await;
            }
        });
        Listening {
            notices,
            task: task.abort_handle(),
        }
    }
}

/// One listening connection, until it drops.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: &tokio_postgres_rustls::MakeRustlsConnect,
    channel: &str,
    notices: &Notices,
) -> Result<(), tokio_postgres::Error> {
    use futures_util::StreamExt as _;
    let (client, mut connection) = config.connect(tls.clone()).await?;
    let (tx, mut messages) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut stream = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = stream.next().await {
            let end = message.is_err();
            if tx.send(message).is_err() || end {
                break;
            }
        }
    });
    client.batch_execute(&format!("LISTEN {channel}")).await?;
    notices.set_live(true);
    while let Some(message) = messages.recv().await {
        match message {
            Ok(tokio_postgres::AsyncMessage::Notification(_)) => notices.bump(),
            Ok(_) => {}
            Err(e) => {
                driver.abort();
                return Err(e);
            }
        }
    }
    driver.abort();
    Ok(())
}
