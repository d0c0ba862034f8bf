//! The one error type of the core. Input errors are values, never panics.

use std::fmt;

/// Why the core refused an input or an option.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// An array has the wrong shape.
    Shape {
        argument: &'static str,
        expected: String,
        got: String,
    },
    /// An array holds NaN or an infinity.
    NonFinite { argument: &'static str },
    /// An option is out of range.
    InvalidOption {
        option: &'static str,
        message: String,
    },
    /// The worker pool could not be built.
    ThreadPool(String),
    /// The calling thread's floating-point environment is not IEEE
    /// round-to-nearest with subnormals, and could not be made so.
    FloatEnvironment(String),
    /// The exact path was required but needs more memory than allowed.
    MemoryLimit { needed: u128, limit: u128 },
    /// The working space a call needs could not be reserved (a process
    /// address-space limit, or the machine's memory).
    OutOfMemory { needed: u128 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape {
                argument,
                expected,
                got,
            } => write!(f, "{argument} has shape {got}, expected {expected}"),
            Error::NonFinite { argument } => {
                write!(f, "{argument} contains NaN or infinite values")
            }
            Error::InvalidOption { option, message } => write!(f, "{option}: {message}"),
            Error::ThreadPool(message) => write!(f, "could not start worker threads: {message}"),
            Error::FloatEnvironment(why) => write!(
                f,
                "the floating-point environment is not the IEEE default and could not be set \
                 ({why}); every bound skipsearch proves assumes round-to-nearest with subnormal \
                 numbers kept, so no verdict is given (a library built with -ffast-math, or one \
                 that changes the rounding mode, may have changed it)"
            ),
            Error::MemoryLimit { needed, limit } => write!(
                f,
                "memory_limit: the exact relaxation distance needs about {} (16 m^2 bytes: \
                 the m x m Gram matrix and the search's working space), over the memory limit \
                 of {}; raise memory_limit or pass distance=None or False for a certificate bound",
                bytes(*needed),
                bytes(*limit)
            ),
            Error::OutOfMemory { needed } => write!(
                f,
                "could not reserve about {} of working space (the block's \
                 matrices and the dense kernels' buffers, a few times the L3 cache per \
                 worker thread); a process memory limit such as ulimit -v, or the machine's \
                 memory, is too small for this call (fewer threads need less)",
                bytes(*needed)
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A byte count for people: `512 bytes`, `1.5 MB`, `4.29 GB`.
fn bytes(n: u128) -> String {
    let x = n as f64;
    match x {
        x if x >= 1e9 => format!("{:.2} GB", x / 1e9),
        x if x >= 1e6 => format!("{:.1} MB", x / 1e6),
        x if x >= 1e3 => format!("{:.1} kB", x / 1e3),
        _ => format!("{n} bytes"),
    }
}

/// Every column has `k` entries, as the right-hand side does.
pub fn check_columns<T>(columns: &[Vec<T>], k: usize) -> Result<(), Error> {
    if columns.iter().any(|c| c.len() != k) {
        return Err(Error::InvalidOption {
            option: "A",
            message: format!("every column must have {k} entries, as b does"),
        });
    }
    Ok(())
}
