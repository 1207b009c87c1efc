use std::rc::Rc;

use pyo3_dlpack::{IntoDLPack, TensorData};

// Memory that is not `Send + Sync`: one error on the data field.
struct Pinned(Rc<Vec<f32>>);

// SAFETY: the vector lives as long as the value and is never resized.
unsafe impl TensorData for Pinned {
    fn data_ptr(&self) -> *mut std::ffi::c_void {
        self.0.as_ptr() as *mut std::ffi::c_void
    }
    fn byte_len(&self) -> Option<usize> {
        Some(self.0.len() * 4)
    }
}

#[derive(IntoDLPack)]
struct Shared {
    #[dlpack(data)]
    samples: Pinned,
}

fn main() {}
