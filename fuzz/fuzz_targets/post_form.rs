//! The S3 listener reads the head of every browser-form upload (PostObject) before s3s
//! does, to put the uploaded file's name into a `${filename}` key: any bytes a client
//! sends there must give an answer (rewrite, leave alone, read more), never a panic. The
//! input is the content type's boundary, a NUL, then the form's head. Run:
//! `cargo fuzz run post_form fuzz/corpus/post_form`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3gw::post_object::{FormHead, boundary, expand_filename};

fuzz_target!(|data: &[u8]| {
    let Some(i) = data.iter().position(|b| *b == 0) else {
        return;
    };
    let Ok(content_type) = std::str::from_utf8(&data[..i]) else {
        return;
    };
    let Some(b) = boundary(content_type) else {
        return;
    };
    let head = &data[i + 1..];
    if let FormHead::Rewritten(out) = expand_filename(head, b) {
        // The rewrite changes the key field only: the file part's bytes stay the tail.
        let file = head.len() - head.iter().rev().take_while(|c| **c != b'\n').count();
        assert!(out.ends_with(&head[file..]));
    }
});
