//! `#[dlpack(crate = "…")]`: the derives work when the runtime crate is
//! renamed (here `renamed_dlpack`) or re-exported under another path. This
//! crate has no `pyo3_dlpack` in scope at all, so it only compiles if the
//! generated code follows the override.

/// A re-export, as a facade crate would do.
pub mod facade {
    pub use ::renamed_dlpack as dl;
}

use renamed_dlpack::{AlignedBuffer, PyTensor};

/// Through the renamed crate.
#[derive(Debug, renamed_dlpack::IntoDLPack)]
#[dlpack(crate = "::renamed_dlpack")]
pub struct Exported {
    #[dlpack(data)]
    pub data: AlignedBuffer<f32>,
    #[dlpack(shape)]
    pub shape: [usize; 2],
}

/// Through a re-export path.
#[derive(Debug, facade::dl::FromDLPack)]
#[dlpack(crate = "crate::facade::dl", dtype = f32, ndim = 2)]
pub struct Imported {
    #[dlpack(tensor)]
    pub tensor: PyTensor,
    #[dlpack(shape)]
    pub shape: [usize; 2],
}

#[cfg(test)]
mod tests {
    use super::*;
    use renamed_dlpack::{FromDLPack, IntoDLPack};

    #[test]
    fn the_renamed_derives_work() {
        let exported = Exported {
            data: AlignedBuffer::zeroed(6),
            shape: [2, 3],
        };
        assert_eq!(exported.tensor_info().unwrap().shape(), vec![2, 3]);
        fn takes_from<T: FromDLPack>() {}
        takes_from::<Imported>();
    }
}
