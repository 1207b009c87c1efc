//! The DLPack C exchange API (DLPack 1.3, DLPACK.md §5), both sides, in one
//! place: a type advertises a static table of C functions as
//! `type(x).__dlpack_c_exchange_api__` (a capsule named
//! `dlpack_exchange_api`), so tensors cross without a Python call.
//!
//! - [`consumer`]: the tables of producers (torch ≥ 2.10), looked up once
//!   per type, and the calls into them (owned and borrowed imports, the
//!   allocator, `to_py_object`, the current work stream);
//! - [`producer`]: `DLPackTensor`'s own table.

mod consumer;
pub(crate) mod producer;

pub(crate) use consumer::{ExchangeApi, lookup, lookup_for_import, lookup_type};
