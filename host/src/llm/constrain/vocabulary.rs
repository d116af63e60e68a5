//! A model's vocabulary as a trie, walked with a machine to find the tokens it allows.

use super::Machine;

/// A model's vocabulary as a trie of characters, for finding every token whose whole
/// text a machine accepts next.
#[derive(Debug)]
pub struct Vocabulary {
    /// Node 0 is the root; each node's children by character, and the tokens that end
    /// there.
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    children: Vec<(char, u32)>,
    tokens: Vec<u32>,
}

impl Vocabulary {
    /// The trie of `pieces` (each token's text by id; empty ones, such as control
    /// tokens, are never allowed).
    pub fn new(pieces: &[String]) -> Self {
        let mut nodes = vec![TrieNode::default()];
        for (id, piece) in pieces.iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            let mut at = 0usize;
            for c in piece.chars() {
                at = match nodes[at].children.iter().find(|(k, _)| *k == c) {
                    Some((_, child)) => *child as usize,
                    None => {
                        nodes.push(TrieNode::default());
                        let child = nodes.len() - 1;
                        nodes[at].children.push((c, child as u32));
                        child
                    }
                };
            }
            nodes[at].tokens.push(id as u32);
        }
        Self { nodes }
    }

    /// Every token `machine` accepts whole as what comes next.
    pub fn allowed(&self, machine: &Machine) -> Vec<u32> {
        let mut allowed = Vec::new();
        let mut stack = vec![(0usize, machine.clone())];
        while let Some((at, machine)) = stack.pop() {
            for &(c, child) in &self.nodes[at].children {
                let mut next = machine.clone();
                if next.feed(c) {
                    let child = child as usize;
                    allowed.extend_from_slice(&self.nodes[child].tokens);
                    if !self.nodes[child].children.is_empty() {
                        stack.push((child, next));
                    }
                }
            }
        }
        allowed
    }
}
