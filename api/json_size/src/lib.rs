//! The bytes an answer (dicts, lists, tuples, strings, numbers, booleans, `None`) takes as
//! JSON as orjson writes it (UTF-8, compact, escaping only `"`, `\` and control characters),
//! measured over the objects without encoding them, and stopping once past a limit.
//!
//! Exact for strings (escapes included), containers, integers of 64 bits, booleans and `None`;
//! a float or a wider integer counts as [`SCALAR`] bytes, at least what orjson writes for it
//! (or refuses to), and so does any other object (see [`SCALAR`]). A string with a lone surrogate, which orjson refuses,
//! counts 6 bytes a character. Each long string is measured once however often the answer
//! holds it (an answer shares the graph's strings). Checked against `len(orjson.dumps(...))`
//! on shared vectors in tests/api/test_api_answer_size.py.

use std::collections::HashMap;
use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::prelude::*;

/// What a float, or a wider integer (which orjson refuses), may take:
/// "-2.2250738585072014e-308". Other objects count as much, which is no bound for them (orjson
/// writes an enum, a dataclass or a datetime whole); an answer holds none: graphql-core
/// serialises every leaf to a str, int, float, bool or None.
const SCALAR: u64 = 24;
/// A string at least this long is measured once (keyed by its address) however often it recurs.
const REMEMBERED: isize = 256;

/// Extra bytes each ASCII character takes escaped: `\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`
/// one; other control characters five (`\u0001`).
const EXTRA: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut c = 0;
    while c < 0x20 {
        table[c] = match c {
            0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
            _ => 5,
        };
        c += 1;
    }
    table[b'"' as usize] = 1;
    table[b'\\' as usize] = 1;
    table
};

#[inline]
fn ascii_escaped(c: u32) -> u64 {
    1 + EXTRA[c as usize] as u64
}

fn ascii_bytes(bytes: &[u8]) -> u64 {
    let special: usize = bytes
        .iter()
        .map(|&c| (c < 0x20 || c == b'"' || c == b'\\') as usize)
        .sum();
    if special == 0 {
        bytes.len() as u64 + 2
    } else {
        bytes.iter().map(|&c| ascii_escaped(c as u32)).sum::<u64>() + 2
    }
}

/// One character of a non-ASCII string; `None` for a surrogate (not UTF-8).
#[inline]
fn char_bytes(c: u32) -> Option<u64> {
    match c {
        0..=0x7f => Some(ascii_escaped(c)),
        0x80..=0x7ff => Some(2),
        0xd800..=0xdfff => None,
        0x800..=0xffff => Some(3),
        _ => Some(4),
    }
}

fn wide_bytes<T: Copy + Into<u32>>(chars: &[T]) -> u64 {
    let mut total = 2;
    for &c in chars {
        match char_bytes(c.into()) {
            Some(n) => total += n,
            None => return 6 * chars.len() as u64 + 2,
        }
    }
    total
}

/// The bytes of the JSON string `s` (a `str`, or a subclass) with its quotes.
unsafe fn str_bytes(s: *mut ffi::PyObject) -> u64 {
    // A function, unlike the macros below: on 3.11 it readies a legacy string (its storage
    // made on first use), which the macros would read as empty.
    let Ok(len) = usize::try_from(ffi::PyUnicode_GetLength(s)) else {
        ffi::PyErr_Clear();
        return u64::MAX / 2; // no storage to read: past any limit
    };
    let data = ffi::PyUnicode_DATA(s);
    match ffi::PyUnicode_KIND(s) {
        ffi::PyUnicode_1BYTE_KIND => {
            let bytes = std::slice::from_raw_parts(data as *const u8, len);
            if ffi::PyUnicode_IS_ASCII(s) != 0 {
                ascii_bytes(bytes)
            } else {
                wide_bytes(bytes)
            }
        }
        ffi::PyUnicode_2BYTE_KIND => {
            wide_bytes(std::slice::from_raw_parts(data as *const u16, len))
        }
        _ => wide_bytes(std::slice::from_raw_parts(data as *const u32, len)),
    }
}

fn digits(n: u64) -> u64 {
    n.checked_ilog10().map_or(1, |d| d as u64 + 1)
}

unsafe fn scalar_bytes(o: *mut ffi::PyObject) -> u64 {
    if o == ffi::Py_None() || o == ffi::Py_True() {
        4
    } else if o == ffi::Py_False() {
        5
    } else if ffi::PyLong_CheckExact(o) != 0 {
        let mut overflow: c_int = 0;
        let value = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
        if overflow != 0 {
            SCALAR
        } else {
            (value < 0) as u64 + digits(value.unsigned_abs())
        }
    } else {
        SCALAR
    }
}

struct Walk {
    total: u64,
    remembered: HashMap<usize, u64>,
}

impl Walk {
    unsafe fn string(&mut self, s: *mut ffi::PyObject) {
        self.total += if ffi::PyUnicode_GET_LENGTH(s) >= REMEMBERED {
            *self
                .remembered
                .entry(s as usize)
                .or_insert_with(|| str_bytes(s))
        } else {
            str_bytes(s)
        };
    }

    /// A value inside a container: a string is measured now, a container stacked.
    unsafe fn value(&mut self, o: *mut ffi::PyObject, stack: &mut Vec<*mut ffi::PyObject>) {
        if ffi::PyUnicode_Check(o) != 0 {
            self.string(o)
        } else if ffi::PyDict_Check(o) != 0
            || ffi::PyList_Check(o) != 0
            || ffi::PyTuple_Check(o) != 0
        {
            stack.push(o)
        } else {
            self.total += scalar_bytes(o)
        }
    }
}

/// Braces or brackets, and a comma between each two of `n` entries.
fn container(n: isize) -> u64 {
    if n == 0 {
        2
    } else {
        n as u64 + 1
    }
}

/// The bytes `data` takes as JSON, or a count past `limit` as soon as it is past it.
#[pyfunction]
fn answer_bytes(data: &Bound<'_, PyAny>, limit: u64) -> u64 {
    let mut walk = Walk {
        total: 0,
        remembered: HashMap::new(),
    };
    let mut stack: Vec<*mut ffi::PyObject> = Vec::new();
    // Safety: the GIL is held throughout and nothing here runs Python code, so `data` and
    // everything it holds stay alive and unchanged; borrowed references suffice.
    unsafe {
        walk.value(data.as_ptr(), &mut stack);
        while let Some(o) = stack.pop() {
            if walk.total > limit {
                break;
            }
            if ffi::PyDict_Check(o) != 0 {
                walk.total += container(ffi::PyDict_Size(o));
                let mut position: ffi::Py_ssize_t = 0;
                let mut key: *mut ffi::PyObject = std::ptr::null_mut();
                let mut value: *mut ffi::PyObject = std::ptr::null_mut();
                while ffi::PyDict_Next(o, &mut position, &mut key, &mut value) != 0 {
                    if ffi::PyUnicode_Check(key) != 0 {
                        walk.string(key);
                    } else {
                        walk.total += SCALAR;
                    }
                    walk.total += 1; // the colon
                    walk.value(value, &mut stack);
                    if walk.total > limit {
                        return walk.total;
                    }
                }
            } else {
                type Item = unsafe fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject;
                let (n, item): (ffi::Py_ssize_t, Item) = if ffi::PyList_Check(o) != 0 {
                    (ffi::PyList_GET_SIZE(o), ffi::PyList_GET_ITEM)
                } else {
                    (ffi::PyTuple_GET_SIZE(o), ffi::PyTuple_GET_ITEM)
                };
                walk.total += container(n);
                for i in 0..n {
                    walk.value(item(o, i), &mut stack);
                    if walk.total > limit {
                        return walk.total;
                    }
                }
            }
        }
    }
    walk.total
}

// The walk keeps borrowed references while it runs: it needs the GIL, also on a free-threaded
// build (PyO3 0.30 declares a module free of it unless told).
#[pymodule(gil_used = true)]
fn _json_size(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(answer_bytes, module)?)
}
