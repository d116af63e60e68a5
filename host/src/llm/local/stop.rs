//! Stop texts: where an answer ends when the caller names text that ends it
//! (`ChatOptions::stop`).

/// Where the first of `stops` starts in `text`.
pub(super) fn first_stop(text: &str, stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min()
}

#[cfg(test)]
mod tests {
    use super::first_stop;

    #[test]
    fn an_answer_ends_where_the_first_stop_text_starts() {
        let stops = ["\n\n".to_owned(), "User:".to_owned()];
        assert_eq!(first_stop("The answer is: 22.", &stops), None);
        assert_eq!(
            first_stop("The answer is: 22.\n\nThis is a special case", &stops),
            Some(18)
        );
        assert_eq!(first_stop("Yes. User: and", &stops), Some(5));
        assert_eq!(first_stop("text", &[String::new()]), None);
    }
}
