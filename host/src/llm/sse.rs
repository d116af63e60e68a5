//! Server-sent events, read line by line from a blocking body (the `text/event-stream`
//! format both providers stream in).

use std::io::BufRead;

/// One event: its `event:` name (empty if none) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    pub(super) event: String,
    pub(super) data: String,
}

/// Calls `on_event` for each event of `reader` until it returns `false` or the stream
/// ends. Comments (`:`) and unknown fields are skipped, as the format requires.
pub(super) fn read_events(
    reader: impl BufRead,
    mut on_event: impl FnMut(SseEvent) -> bool,
) -> std::io::Result<()> {
    let mut event = String::new();
    let mut data: Vec<String> = Vec::new();
    for line in reader.lines() {
        let line = line?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            if !data.is_empty() || !event.is_empty() {
                let done = !on_event(SseEvent {
                    event: std::mem::take(&mut event),
                    data: data.join("\n"),
                });
                data.clear();
                if done {
                    return Ok(());
                }
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value.to_owned()),
            _ => {}
        }
    }
    if !data.is_empty() {
        on_event(SseEvent {
            event,
            data: data.join("\n"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_on_blank_lines_and_comments_skipped() {
        let text = ": keep-alive\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: line one\ndata: line two\n\ndata: [DONE]\n";
        let mut seen = Vec::new();
        read_events(text.as_bytes(), |e| {
            seen.push((e.event, e.data));
            true
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                ("message_start".to_owned(), "{\"a\":1}".to_owned()),
                (String::new(), "line one\nline two".to_owned()),
                (String::new(), "[DONE]".to_owned()),
            ]
        );
    }
}
