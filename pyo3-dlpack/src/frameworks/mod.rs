//! The framework homes: each framework with special handling owns, in one
//! place and in both directions, everything specific to it: how its types
//! are recognised (by identity, never by name), in-place reads, C API
//! slots and C functions, native returns, allocation and type tables.
//! The rest of the crate asks these modules and never re-derives.
//!
//! - [`numpy`]: NumPy's array type from its C API table, arrays read in
//!   place, arrays made over exported memory, the type numbers;
//! - [`torch`]: `torch.Tensor`, the checks of its C exchange path, tensors
//!   made through its exchange table;
//! - [`jax`]: imports of jaxlib's arrays through its C++ export, and
//!   `Native::jax` results through its capsule import (read-only values
//!   included: JAX arrays are immutable);
//! - [`framework`]: [`Framework`], which framework an object belongs to, and
//!   the public `from_dlpack` route (JAX, CuPy); [`native`]: [`Native`]
//!   results; [`allocate`]: outputs allocated by the caller's framework.

pub(crate) mod allocate;
pub(crate) mod framework;
pub(crate) mod jax;
pub(crate) mod native;
pub(crate) mod numpy;
pub(crate) mod torch;

pub use allocate::{Allocated, allocate_like};
pub use framework::Framework;
pub use native::{Native, to_framework};
pub use numpy::NumpyTime;
