#![allow(unused_imports, dead_code)]
use pyo3::prelude::*;
use pyo3_dlpack::{FromDLPack, IntoDLPack, PyTensor};

// One error, on the field: returning the type from a #[pyfunction] adds none.
#[derive(IntoDLPack)]
struct Image {
    #[dlpack(data)]
    pixels: Vec<u8>,
    cache: std::rc::Rc<u8>,
}

#[pyfunction]
fn load() -> Image {
    Image { pixels: vec![0; 4], cache: std::rc::Rc::new(0) }
}

fn main() {}
