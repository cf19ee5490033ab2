//! native-floor FILE ROUNDS KEY_ID=HEX...: time, on one core, what any verifier of the bundles
//! in FILE (one compact bundle per line) must do: parse, recompute the canonical digests
//! (canonical_record, each event's content, the state, the bundle) and check the four
//! signatures. Prints one JSON object: the best round's microseconds per bundle, by phase
//! (parse; write the canonical bytes; hash and compare them; signatures).
//! Every digest and signature must check, or it exits 1: a floor that skipped work would lie.

use std::collections::HashMap;
use std::time::Instant;

use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

const EVENT_UNSIGNED: [&str; 3] = ["signature", "content_sha256", "event_id"];

/// Canonical JSON of an object without `skip`: serde_json's map is sorted by key bytes and
/// writes compact JSON, as orjson's OPT_SORT_KEYS does.
fn canon_without(map: &Map<String, Value>, skip: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8192);
    out.push(b'{');
    let mut first = true;
    for (key, value) in map {
        if skip.contains(&key.as_str()) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, key).expect("write");
        out.push(b':');
        serde_json::to_writer(&mut out, value).expect("write");
    }
    out.push(b'}');
    out
}

fn sha_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

/// The 32 bytes a 64-digit hex string (a digest, a public key) spells.
fn hex32(hex: &str) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
    }
    bytes
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut at = value;
    for key in path {
        at = &at[*key];
    }
    at.as_str().expect("a string field")
}

/// Each digested part's canonical bytes, with the digest the bundle states for it.
fn canonical_parts(bundle: &Value) -> Vec<(Vec<u8>, &str)> {
    let top = bundle.as_object().expect("an object");
    let mut parts = vec![(
        serde_json::to_vec(&top["canonical_record"]).expect("write"),
        str_at(bundle, &["canonical_sha256"]),
    )];
    for event in top["events"].as_array().expect("events") {
        let content = canon_without(event.as_object().expect("event"), &EVENT_UNSIGNED);
        parts.push((content, str_at(event, &["content_sha256"])));
    }
    let state = canon_without(top["state"].as_object().expect("state"), &["state_sha256"]);
    parts.push((state, str_at(bundle, &["state", "state_sha256"])));
    let body = canon_without(top, &["bundle_signature"]);
    parts.push((body, str_at(bundle, &["bundle_signature", "bundle_sha256"])));
    parts
}

fn check(keys: &HashMap<String, VerifyingKey>, block: &Value, digest_hex: &str) -> bool {
    let key = &keys[str_at(block, &["key_id"])];
    let signature = base64::engine::general_purpose::STANDARD
        .decode(str_at(block, &["signature_b64"]))
        .expect("base64");
    let signature = Signature::from_slice(&signature).expect("64 bytes");
    key.verify_strict(&hex32(digest_hex), &signature).is_ok()
}

fn signatures_ok(keys: &HashMap<String, VerifyingKey>, bundle: &Value) -> bool {
    let mut ok = true;
    for event in bundle["events"].as_array().expect("events") {
        ok &= check(
            keys,
            &event["signature"],
            str_at(event, &["content_sha256"]),
        );
        if event["event_type"] == "record_created" {
            let receipt = &event["payload"]["receipt"];
            ok &= check(keys, receipt, str_at(receipt, &["canonical_sha256"]));
        }
    }
    let signature = &bundle["bundle_signature"];
    ok & check(keys, signature, str_at(signature, &["bundle_sha256"]))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read the bundles");
    let rounds: usize = args[2].parse().expect("rounds");
    let keys: HashMap<String, VerifyingKey> = args[3..]
        .iter()
        .map(|arg| {
            let (id, hex) = arg.split_once('=').expect("KEY_ID=HEX");
            (
                id.to_string(),
                VerifyingKey::from_bytes(&hex32(hex)).expect("a key"),
            )
        })
        .collect();
    let lines: Vec<&[u8]> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let count = lines.len() as f64;
    let (mut parse, mut canon, mut hash, mut signatures) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let started = Instant::now();
        let bundles: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_slice(l).expect("JSON"))
            .collect();
        parse = parse.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let parts: Vec<Vec<(Vec<u8>, &str)>> = bundles.iter().map(canonical_parts).collect();
        canon = canon.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let good = parts
            .iter()
            .filter(|p| p.iter().all(|(bytes, stated)| sha_hex(bytes) == *stated))
            .count();
        hash = hash.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let signed = bundles.iter().filter(|b| signatures_ok(&keys, b)).count();
        signatures = signatures.min(started.elapsed().as_secs_f64());
        if good != lines.len() || signed != lines.len() {
            eprintln!(
                "native-floor: {good} digests and {signed} signature sets of {} checked",
                lines.len()
            );
            std::process::exit(1);
        }
    }
    let us = |s: f64| s / count * 1e6;
    println!(
        "{{\"bundles\": {}, \"parse_us\": {:.2}, \"canon_us\": {:.2}, \"hash_us\": {:.2}, \"signatures_us\": {:.2}, \"total_us\": {:.2}}}",
        lines.len(),
        us(parse),
        us(canon),
        us(hash),
        us(signatures),
        us(parse + canon + hash + signatures)
    );
}
