//! A plain WIT component built with `wit-bindgen` alone: no Evo SDK, no Evo WIT. Evo
//! calls each exported function as a skill; this one covers every WIT type kind.

#![allow(
    unsafe_code,
    clippy::undocumented_unsafe_blocks,
    reason = "the glue wit-bindgen generates"
)]

wit_bindgen::generate!({ world: "kinds-world", path: "wit" });

use exports::fixture::plain::counters::{self, GuestCounter};
use exports::fixture::plain::kinds::{self, Color, Perms, Point, Shape};

struct Component;

impl kinds::Guest for Component {
    fn echo_bool(v: bool) -> bool {
        v
    }
    fn echo_u8(v: u8) -> u8 {
        v
    }
    fn echo_s8(v: i8) -> i8 {
        v
    }
    fn echo_u16(v: u16) -> u16 {
        v
    }
    fn echo_s16(v: i16) -> i16 {
        v
    }
    fn echo_u32(v: u32) -> u32 {
        v
    }
    fn echo_s32(v: i32) -> i32 {
        v
    }
    fn echo_u64(v: u64) -> u64 {
        v
    }
    fn echo_s64(v: i64) -> i64 {
        v
    }
    fn echo_f32(v: f32) -> f32 {
        v
    }
    fn echo_f64(v: f64) -> f64 {
        v
    }
    fn echo_char(v: char) -> char {
        v
    }
    fn echo_string(v: String) -> String {
        v
    }
    fn echo_point(v: Point) -> Point {
        v
    }
    fn echo_shape(v: Shape) -> Shape {
        v
    }
    fn echo_color(v: Color) -> Color {
        v
    }
    fn echo_perms(v: Perms) -> Perms {
        v
    }
    fn echo_option(v: Option<u32>) -> Option<u32> {
        v
    }
    fn echo_nested(v: Option<Option<String>>) -> Option<Option<String>> {
        v
    }
    fn echo_tuple(v: (u8, String, bool)) -> (u8, String, bool) {
        v
    }
    fn echo_list(v: Vec<Point>) -> Vec<Point> {
        v
    }
    fn echo_bytes(v: Vec<u8>) -> Vec<u8> {
        v
    }
    fn echo_result(v: Result<String, Color>) -> Result<String, Color> {
        v
    }
    fn divide(a: i64, b: i64) -> Result<i64, String> {
        a.checked_div(b)
            .ok_or_else(|| format!("cannot divide {a} by {b}"))
    }
    fn label_bytes(data: Vec<u8>, label: String) -> Result<Vec<u8>, String> {
        if label.is_empty() {
            return Err("the label is empty".to_owned());
        }
        let mut data = data;
        data.extend_from_slice(label.as_bytes());
        Ok(data)
    }
    fn bytes_to_text(data: Vec<u8>) -> Result<String, String> {
        String::from_utf8(data).map_err(|e| format!("not UTF-8: {e}"))
    }
    fn nothing() {}
}

struct Counter(std::cell::Cell<u32>);

impl GuestCounter for Counter {
    fn new(start: u32) -> Self {
        Self(std::cell::Cell::new(start))
    }
    fn increment(&self) -> u32 {
        self.0.set(self.0.get().wrapping_add(1));
        self.0.get()
    }
}

impl counters::Guest for Component {
    type Counter = Counter;
    fn read(c: counters::CounterBorrow<'_>) -> u32 {
        c.get::<Counter>().0.get()
    }
    fn add(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
}

impl Guest for Component {
    fn greet(name: String) -> String {
        format!("hello, {name}")
    }

    fn calculate(expression: String) -> Result<f64, String> {
        evo_expr::evaluate(&expression).map_err(|e| e.to_string())
    }
}

export!(Component);
