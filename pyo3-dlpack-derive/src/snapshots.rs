//! Expansion snapshots: the generated code for representative structs,
//! formatted and checked into `snapshots/`, so a change to it shows in review.
//! Regenerate with `SNAPSHOTS=overwrite cargo test -p pyo3-dlpack-derive`.

use std::path::PathBuf;

use crate::ast::Derive;

fn check(name: &str, derive: Derive, input: &str) {
    let input: syn::DeriveInput = syn::parse_str(input).expect("test input parses");
    let tokens = crate::expand::derive(derive, &input);
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as a file");
    let expanded = prettyplease::unparse(&file);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("snapshots")
        .join(format!("{name}.expanded.rs"));
    if std::env::var_os("SNAPSHOTS").is_some_and(|v| v == "overwrite") {
        std::fs::write(&path, &expanded).expect("snapshot written");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}: run with SNAPSHOTS=overwrite", path.display()));
    assert_eq!(
        expanded, expected,
        "expansion of {name} changed; run with SNAPSHOTS=overwrite and review the diff"
    );
}

#[test]
fn into_dlpack_image() {
    check(
        "into_image",
        Derive::IntoDLPack,
        r#"
        struct Image {
            #[dlpack(data)] pixels: AlignedBuffer<u8>,
            #[dlpack(shape)] shape: [usize; 3],
            name: String,
        }"#,
    );
}

#[test]
fn into_dlpack_every_attribute() {
    check(
        "into_device_tensor",
        Derive::IntoDLPack,
        r#"
        #[dlpack(crate = "crate::dl")]
        struct DeviceTensor {
            #[dlpack(data)] buffer: RawBuffer,
            #[dlpack(shape)] shape: Vec<i64>,
            #[dlpack(strides)] strides: Option<Vec<i64>>,
            #[dlpack(device)] device: Device,
            #[dlpack(dtype)] dtype: DataType,
            #[dlpack(read_only)] frozen: bool,
        }"#,
    );
}

#[test]
fn into_dlpack_generic_with_container_dtype() {
    check(
        "into_generic",
        Derive::IntoDLPack,
        r#"
        #[dlpack(dtype = f32, read_only)]
        struct Samples<S: TensorData + Send + Sync + 'static> where S: Clone {
            #[dlpack(data)] storage: S,
        }"#,
    );
}

#[test]
fn into_dlpack_inner() {
    check(
        "into_inner",
        Derive::IntoDLPack,
        r#"
        struct Labelled {
            #[dlpack(inner)] pixels: Pixels,
            label: String,
        }"#,
    );
}

#[test]
fn from_dlpack_shape_list() {
    check(
        "from_picture",
        Derive::FromDLPack,
        r#"
        #[dlpack(dtype = u8, shape = [height, width, channels])]
        struct Picture {
            #[dlpack(tensor)] pixels: PyTensor,
            height: usize,
            width: u32,
            channels: u8,
            label: String,
        }"#,
    );
}

#[test]
fn from_dlpack_matrix() {
    check(
        "from_matrix",
        Derive::FromDLPack,
        r#"
        #[dlpack(dtype = f32, ndim = 2, device = "cuda:1", contiguous, writable)]
        struct Matrix {
            #[dlpack(tensor)] tensor: PyTensor,
            #[dlpack(shape)] shape: [usize; 2],
            #[dlpack(strides)] strides: Vec<i64>,
            #[dlpack(data)] data: *mut f32,
            #[dlpack(device)] device: Device,
            #[dlpack(dtype)] dtype: DataType,
            #[dlpack(read_only)] read_only: bool,
            note: Option<String>,
        }"#,
    );
}

#[test]
fn invalid_input_expands_to_errors_and_stub_impls() {
    check(
        "invalid",
        Derive::IntoDLPack,
        r#"
        struct Broken {
            #[dlpack(pixels)] data: Vec<u8>,
        }"#,
    );
}
