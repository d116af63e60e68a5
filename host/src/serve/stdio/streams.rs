//! This process's standard input and output, read and written by the runtime's event
//! loop when they are pipes or sockets.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{FileType, OFlags, fcntl_getfl, fcntl_setfl, fstat};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// A stream [`serve`](super::serve) reads messages from.
pub type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// A stream [`serve`](super::serve) writes messages to.
pub type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// This process's standard input and output, ready for [`serve`](super::serve), and what puts them
/// back as they were.
///
/// An MCP client starts its server with pipes (or a socket pair) on the server's
/// standard input and output: those are made non-blocking and read and written by the
/// runtime's event loop, on the thread that handles the message. Tokio's own
/// `stdin()`/`stdout()`, used for anything else (a terminal, a file), hand every read
/// and every write to a blocking thread and back: two thread hand-offs on each call's
/// path, and the CPU time of waking those threads.
///
/// Whether a stream blocks is a property of the open file, which other processes may
/// share (a shell's pipe): the [`StdStreams`] returned puts the flags back as it found
/// them when dropped. Must be called on a Tokio runtime with I/O enabled.
pub fn std_streams() -> (Reader, Writer, StdStreams) {
    let mut streams = StdStreams(Vec::new());
    let read = streams
        .evented(std::io::stdin().as_fd(), |kind, fd| match kind {
            Kind::Pipe => Ok(Box::new(pipe::Receiver::from_owned_fd_unchecked(fd)?) as Reader),
            Kind::Socket => Ok(Box::new(tokio::net::UnixStream::from_std(fd.into())?)),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let write = streams
        .evented(std::io::stdout().as_fd(), |kind, fd| match kind {
            Kind::Pipe => Ok(Box::new(pipe::Sender::from_owned_fd_unchecked(fd)?) as Writer),
            Kind::Socket => Ok(Box::new(tokio::net::UnixStream::from_std(fd.into())?)),
        })
        .unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (read, write, streams)
}

/// What a standard stream is, when the event loop can wait on it.
enum Kind {
    Pipe,
    Socket,
}

/// Standard streams made non-blocking, with the flags each had before: restored on drop.
#[derive(Debug)]
pub struct StdStreams(Vec<(OwnedFd, OFlags)>);

impl StdStreams {
    /// `fd` (a copy of it) made non-blocking and given to `register`, when it is a pipe
    /// or a socket; `None` (and `fd` as it was) otherwise or when that fails.
    fn evented<T>(
        &mut self,
        fd: BorrowedFd<'_>,
        register: impl FnOnce(Kind, OwnedFd) -> std::io::Result<T>,
    ) -> Option<T> {
        let kind = match FileType::from_raw_mode(fstat(fd).ok()?.st_mode) {
            FileType::Fifo => Kind::Pipe,
            FileType::Socket => Kind::Socket,
            _ => return None,
        };
        let flags = fcntl_getfl(fd).ok()?;
        let (copy, keep) = (fd.try_clone_to_owned().ok()?, fd.try_clone_to_owned().ok()?);
        fcntl_setfl(fd, flags | OFlags::NONBLOCK).ok()?;
        match register(kind, copy) {
            Ok(stream) => {
                self.0.push((keep, flags));
                Some(stream)
            }
            Err(e) => {
                tracing::debug!("standard stream not evented: {e}");
                let _ = fcntl_setfl(fd, flags);
                None
            }
        }
    }
}

impl Drop for StdStreams {
    fn drop(&mut self) {
        // Last made first: when standard input and output are one socket, the second
        // saw the first's change as its original flags.
        for (fd, flags) in self.0.iter().rev() {
            let _ = fcntl_setfl(fd, *flags);
        }
    }
}
