//! trybuild cases for `#[derive(IntoDLPack, FromDLPack)]` live in `tests/`;
//! they arrive with the derives. This library is empty.
