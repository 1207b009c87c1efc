//! Element types (`DLDataType` in the C header).

use std::fmt;

/// The type code of a [`DataType`]: `DLDataTypeCode` in the DLPack header.
///
/// An integer newtype, not a Rust `enum`, so that a code from a newer header
/// is a value to report, never undefined behaviour.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataTypeCode(u8);

impl DataTypeCode {
    /// `kDLInt`: signed integer.
    pub const INT: Self = Self(0);
    /// `kDLUInt`: unsigned integer.
    pub const UINT: Self = Self(1);
    /// `kDLFloat`: IEEE floating point.
    pub const FLOAT: Self = Self(2);
    /// `kDLOpaqueHandle`: reserved for testing.
    pub const OPAQUE_HANDLE: Self = Self(3);
    /// `kDLBfloat`: bfloat16.
    pub const BFLOAT: Self = Self(4);
    /// `kDLComplex`: `bits` counts both parts (complex64 has 64 bits).
    pub const COMPLEX: Self = Self(5);
    /// `kDLBool`: one byte per element.
    pub const BOOL: Self = Self(6);
    /// `kDLFloat8_e3m4`.
    pub const FLOAT8_E3M4: Self = Self(7);
    /// `kDLFloat8_e4m3`.
    pub const FLOAT8_E4M3: Self = Self(8);
    /// `kDLFloat8_e4m3b11fnuz`.
    pub const FLOAT8_E4M3B11FNUZ: Self = Self(9);
    /// `kDLFloat8_e4m3fn`.
    pub const FLOAT8_E4M3FN: Self = Self(10);
    /// `kDLFloat8_e4m3fnuz`.
    pub const FLOAT8_E4M3FNUZ: Self = Self(11);
    /// `kDLFloat8_e5m2`.
    pub const FLOAT8_E5M2: Self = Self(12);
    /// `kDLFloat8_e5m2fnuz`.
    pub const FLOAT8_E5M2FNUZ: Self = Self(13);
    /// `kDLFloat8_e8m0fnu`.
    pub const FLOAT8_E8M0FNU: Self = Self(14);
    /// `kDLFloat6_e2m3fn` (6 bits).
    pub const FLOAT6_E2M3FN: Self = Self(15);
    /// `kDLFloat6_e3m2fn` (6 bits).
    pub const FLOAT6_E3M2FN: Self = Self(16);
    /// `kDLFloat4_e2m1fn` (4 bits).
    pub const FLOAT4_E2M1FN: Self = Self(17);
    /// `kDLBcomplex`: a complex number of two bfloat16 parts, laid out as
    /// [`COMPLEX`](Self::COMPLEX) is (real part first); `bits` counts both
    /// parts, so the one width is 32 (`bcomplex32`). Added after DLPack 1.3
    /// (dmlc/dlpack#187).
    pub const BCOMPLEX: Self = Self(18);

    /// Wraps any code, named or not.
    pub const fn from_code(code: u8) -> Self {
        Self(code)
    }

    /// The raw code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// Whether this crate knows the code: those of DLPack 1.3 and
    /// [`BCOMPLEX`](Self::BCOMPLEX), added to the header after 1.3.
    ///
    /// ```
    /// use pyo3_dlpack::DataTypeCode;
    ///
    /// assert!(DataTypeCode::BCOMPLEX.is_known());
    /// assert!(!DataTypeCode::from_code(19).is_known());
    /// ```
    pub const fn is_known(self) -> bool {
        self.0 <= 18
    }

    /// The name prefix used by `Display`, for the codes whose name carries no width.
    fn fixed_name(self) -> Option<&'static str> {
        Some(match self.0 {
            7 => "float8_e3m4",
            8 => "float8_e4m3",
            9 => "float8_e4m3b11fnuz",
            10 => "float8_e4m3fn",
            11 => "float8_e4m3fnuz",
            12 => "float8_e5m2",
            13 => "float8_e5m2fnuz",
            14 => "float8_e8m0fnu",
            15 => "float6_e2m3fn",
            16 => "float6_e3m2fn",
            17 => "float4_e2m1fn",
            _ => return None,
        })
    }
}

impl fmt::Debug for DataTypeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataTypeCode({})", self.0)
    }
}

/// The element type of a tensor: `DLDataType` in the DLPack header.
///
/// `Display` gives the NumPy/PyTorch name (`float32`, `bfloat16`, `complex64`,
/// `bool`, `float8_e4m3fn`); vector types get an `xN` suffix and codes outside
/// the header print their numbers.
///
/// ```
/// use pyo3_dlpack::DataType;
///
/// assert_eq!(DataType::F32.to_string(), "float32");
/// assert_eq!(DataType::BF16.itemsize(), 2);
/// assert_eq!(DataType::C64.to_string(), "complex64");
/// assert_eq!(DataType::new(pyo3_dlpack::DataTypeCode::FLOAT, 32, 4).to_string(), "float32x4");
/// ```
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataType {
    /// The type code.
    pub code: DataTypeCode,
    /// Bits per lane (for complex: both parts together).
    pub bits: u8,
    /// Lanes per element; 1 for everything but vector types.
    pub lanes: u16,
}

impl DataType {
    /// `bool`, one byte per element.
    pub const BOOL: Self = Self::scalar(DataTypeCode::BOOL, 8);
    /// `int8`.
    pub const I8: Self = Self::scalar(DataTypeCode::INT, 8);
    /// `int16`.
    pub const I16: Self = Self::scalar(DataTypeCode::INT, 16);
    /// `int32`.
    pub const I32: Self = Self::scalar(DataTypeCode::INT, 32);
    /// `int64`.
    pub const I64: Self = Self::scalar(DataTypeCode::INT, 64);
    /// `uint8`.
    pub const U8: Self = Self::scalar(DataTypeCode::UINT, 8);
    /// `uint16`.
    pub const U16: Self = Self::scalar(DataTypeCode::UINT, 16);
    /// `uint32`.
    pub const U32: Self = Self::scalar(DataTypeCode::UINT, 32);
    /// `uint64`.
    pub const U64: Self = Self::scalar(DataTypeCode::UINT, 64);
    /// `float16` (IEEE half).
    pub const F16: Self = Self::scalar(DataTypeCode::FLOAT, 16);
    /// `float32`.
    pub const F32: Self = Self::scalar(DataTypeCode::FLOAT, 32);
    /// `float64`.
    pub const F64: Self = Self::scalar(DataTypeCode::FLOAT, 64);
    /// `bfloat16`.
    pub const BF16: Self = Self::scalar(DataTypeCode::BFLOAT, 16);
    /// `complex32` (two float16 parts).
    pub const C32: Self = Self::scalar(DataTypeCode::COMPLEX, 32);
    /// `complex64` (two float32 parts).
    pub const C64: Self = Self::scalar(DataTypeCode::COMPLEX, 64);
    /// `complex128` (two float64 parts).
    pub const C128: Self = Self::scalar(DataTypeCode::COMPLEX, 128);
    /// `bcomplex32` (two bfloat16 parts, [`DataTypeCode::BCOMPLEX`]), as
    /// torch (`torch.bcomplex32`), ml_dtypes and nanobind name it. NumPy,
    /// torch 2.15 and JAX 0.10 exchange no such tensor over DLPack.
    ///
    /// ```
    /// use pyo3_dlpack::DataType;
    ///
    /// assert_eq!(DataType::BC32.to_string(), "bcomplex32");
    /// assert_eq!(DataType::BC32.itemsize(), 4);
    /// assert_eq!("bcomplex32".parse::<DataType>().unwrap(), DataType::BC32);
    /// ```
    pub const BC32: Self = Self::scalar(DataTypeCode::BCOMPLEX, 32);
    /// `float8_e3m4`.
    pub const F8_E3M4: Self = Self::scalar(DataTypeCode::FLOAT8_E3M4, 8);
    /// `float8_e4m3`.
    pub const F8_E4M3: Self = Self::scalar(DataTypeCode::FLOAT8_E4M3, 8);
    /// `float8_e4m3b11fnuz`.
    pub const F8_E4M3B11FNUZ: Self = Self::scalar(DataTypeCode::FLOAT8_E4M3B11FNUZ, 8);
    /// `float8_e4m3fn`.
    pub const F8_E4M3FN: Self = Self::scalar(DataTypeCode::FLOAT8_E4M3FN, 8);
    /// `float8_e4m3fnuz`.
    pub const F8_E4M3FNUZ: Self = Self::scalar(DataTypeCode::FLOAT8_E4M3FNUZ, 8);
    /// `float8_e5m2`.
    pub const F8_E5M2: Self = Self::scalar(DataTypeCode::FLOAT8_E5M2, 8);
    /// `float8_e5m2fnuz`.
    pub const F8_E5M2FNUZ: Self = Self::scalar(DataTypeCode::FLOAT8_E5M2FNUZ, 8);
    /// `float8_e8m0fnu`.
    pub const F8_E8M0FNU: Self = Self::scalar(DataTypeCode::FLOAT8_E8M0FNU, 8);
    /// `float6_e2m3fn` (6 bits, packed unless the padded flag is set).
    pub const F6_E2M3FN: Self = Self::scalar(DataTypeCode::FLOAT6_E2M3FN, 6);
    /// `float6_e3m2fn` (6 bits, packed unless the padded flag is set).
    pub const F6_E3M2FN: Self = Self::scalar(DataTypeCode::FLOAT6_E3M2FN, 6);
    /// `float4_e2m1fn` (4 bits, packed unless the padded flag is set).
    pub const F4_E2M1FN: Self = Self::scalar(DataTypeCode::FLOAT4_E2M1FN, 4);
    /// `float4_e2m1fn_x2`: two float4 values packed in one byte, as one
    /// element of two lanes (torch's `torch.float4_e2m1fn_x2`, the MXFP4 and
    /// NVFP4 weights' type). The one vector dtype this crate exchanges.
    pub const F4_E2M1FN_X2: Self = Self::new(DataTypeCode::FLOAT4_E2M1FN, 4, 2);

    /// A data type from its three fields.
    pub const fn new(code: DataTypeCode, bits: u8, lanes: u16) -> Self {
        Self { code, bits, lanes }
    }

    const fn scalar(code: DataTypeCode, bits: u8) -> Self {
        Self::new(code, bits, 1)
    }

    /// Bytes per element as the DLPack header counts storage:
    /// `(bits * lanes + 7) / 8`.
    ///
    /// Sub-byte types (`float4_e2m1fn`, `float6_*`) round up to one byte here;
    /// whether a producer packs them is a property of the tensor, not the type.
    pub const fn itemsize(self) -> usize {
        (self.bits as usize * self.lanes as usize).div_ceil(8)
    }

    /// Whether one element fills whole bytes (`bits * lanes` is a multiple of 8),
    /// so that the header's storage size is exact.
    pub const fn is_byte_sized(self) -> bool {
        (self.bits as usize * self.lanes as usize) % 8 == 0 && self.bits > 0 && self.lanes > 0
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.code {
            DataTypeCode::INT => Some("int"),
            DataTypeCode::UINT => Some("uint"),
            DataTypeCode::FLOAT => Some("float"),
            DataTypeCode::BFLOAT => Some("bfloat"),
            DataTypeCode::COMPLEX => Some("complex"),
            DataTypeCode::BCOMPLEX => Some("bcomplex"),
            _ => None,
        };
        let mut lanes_separator = "x";
        match (prefix, self.code.fixed_name()) {
            (Some(prefix), _) => write!(f, "{prefix}{}", self.bits)?,
            (None, Some(name)) if self.bits == default_bits(self.code) => {
                // `float4_e2m1fn_x2`, as torch names it.
                lanes_separator = "_x";
                f.write_str(name)?
            }
            (None, _) if self.code == DataTypeCode::BOOL && self.bits == 8 => {
                f.write_str("bool")?
            }
            _ => {
                return write!(
                    f,
                    "dtype(code={}, bits={}, lanes={})",
                    self.code.0, self.bits, self.lanes
                );
            }
        }
        if self.lanes != 1 {
            write!(f, "{lanes_separator}{}", self.lanes)?;
        }
        Ok(())
    }
}

/// The only width the header allows for a fixed-width code (float8/6/4).
fn default_bits(code: DataTypeCode) -> u8 {
    match code.0 {
        15 | 16 => 6,
        17 => 4,
        _ => 8,
    }
}

impl fmt::Debug for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataType({self})")
    }
}

/// Every named type, for parsing names back.
const NAMED_TYPES: &[DataType] = &[
    DataType::BOOL,
    DataType::I8,
    DataType::I16,
    DataType::I32,
    DataType::I64,
    DataType::U8,
    DataType::U16,
    DataType::U32,
    DataType::U64,
    DataType::F16,
    DataType::F32,
    DataType::F64,
    DataType::BF16,
    DataType::C32,
    DataType::C64,
    DataType::C128,
    DataType::BC32,
    DataType::F8_E3M4,
    DataType::F8_E4M3,
    DataType::F8_E4M3B11FNUZ,
    DataType::F8_E4M3FN,
    DataType::F8_E4M3FNUZ,
    DataType::F8_E5M2,
    DataType::F8_E5M2FNUZ,
    DataType::F8_E8M0FNU,
    DataType::F6_E2M3FN,
    DataType::F6_E3M2FN,
    DataType::F4_E2M1FN,
    DataType::F4_E2M1FN_X2,
];

/// The error of `"…".parse::<DataType>()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDataTypeError {
    input: String,
}

impl fmt::Display for ParseDataTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown dtype {:?}: expected a name such as float32, int64, bool, bfloat16, complex64 or float8_e4m3fn",
            self.input
        )
    }
}

impl std::error::Error for ParseDataTypeError {}

impl std::str::FromStr for DataType {
    type Err = ParseDataTypeError;

    /// Parses the names `Display` prints for the scalar types of DLPack 1.3.
    ///
    /// ```
    /// use pyo3_dlpack::DataType;
    /// assert_eq!("bfloat16".parse::<DataType>().unwrap(), DataType::BF16);
    /// assert!("float128".parse::<DataType>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NAMED_TYPES
            .iter()
            .copied()
            .find(|dtype| format!("{dtype}") == s)
            .ok_or_else(|| ParseDataTypeError { input: s.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_numpy_and_torch() {
        let cases = [
            (DataType::BOOL, "bool"),
            (DataType::I8, "int8"),
            (DataType::I16, "int16"),
            (DataType::I32, "int32"),
            (DataType::I64, "int64"),
            (DataType::U8, "uint8"),
            (DataType::U16, "uint16"),
            (DataType::U32, "uint32"),
            (DataType::U64, "uint64"),
            (DataType::F16, "float16"),
            (DataType::F32, "float32"),
            (DataType::F64, "float64"),
            (DataType::BF16, "bfloat16"),
            (DataType::C32, "complex32"),
            (DataType::C64, "complex64"),
            (DataType::C128, "complex128"),
            (DataType::BC32, "bcomplex32"),
            (DataType::F8_E3M4, "float8_e3m4"),
            (DataType::F8_E4M3, "float8_e4m3"),
            (DataType::F8_E4M3B11FNUZ, "float8_e4m3b11fnuz"),
            (DataType::F8_E4M3FN, "float8_e4m3fn"),
            (DataType::F8_E4M3FNUZ, "float8_e4m3fnuz"),
            (DataType::F8_E5M2, "float8_e5m2"),
            (DataType::F8_E5M2FNUZ, "float8_e5m2fnuz"),
            (DataType::F8_E8M0FNU, "float8_e8m0fnu"),
            (DataType::F6_E2M3FN, "float6_e2m3fn"),
            (DataType::F6_E3M2FN, "float6_e3m2fn"),
            (DataType::F4_E2M1FN, "float4_e2m1fn"),
            (DataType::F4_E2M1FN_X2, "float4_e2m1fn_x2"),
        ];
        assert_eq!(cases.len(), NAMED_TYPES.len());
        for (dtype, name) in cases {
            assert_eq!(dtype.to_string(), name);
            assert_eq!(name.parse::<DataType>().unwrap(), dtype);
        }
        let err = "float128".parse::<DataType>().unwrap_err();
        assert!(
            err.to_string().starts_with("unknown dtype \"float128\""),
            "{err}"
        );
    }

    #[test]
    fn header_codes_are_exact() {
        let codes = [
            (DataTypeCode::INT, 0),
            (DataTypeCode::UINT, 1),
            (DataTypeCode::FLOAT, 2),
            (DataTypeCode::OPAQUE_HANDLE, 3),
            (DataTypeCode::BFLOAT, 4),
            (DataTypeCode::COMPLEX, 5),
            (DataTypeCode::BOOL, 6),
            (DataTypeCode::FLOAT8_E3M4, 7),
            (DataTypeCode::FLOAT8_E4M3, 8),
            (DataTypeCode::FLOAT8_E4M3B11FNUZ, 9),
            (DataTypeCode::FLOAT8_E4M3FN, 10),
            (DataTypeCode::FLOAT8_E4M3FNUZ, 11),
            (DataTypeCode::FLOAT8_E5M2, 12),
            (DataTypeCode::FLOAT8_E5M2FNUZ, 13),
            (DataTypeCode::FLOAT8_E8M0FNU, 14),
            (DataTypeCode::FLOAT6_E2M3FN, 15),
            (DataTypeCode::FLOAT6_E3M2FN, 16),
            (DataTypeCode::FLOAT4_E2M1FN, 17),
            (DataTypeCode::BCOMPLEX, 18),
        ];
        for (code, value) in codes {
            assert_eq!(code.code(), value);
            assert!(code.is_known());
        }
        assert!(!DataTypeCode::from_code(19).is_known());
    }

    #[test]
    fn itemsize_follows_the_header_formula() {
        assert_eq!(DataType::BOOL.itemsize(), 1);
        assert_eq!(DataType::F16.itemsize(), 2);
        assert_eq!(DataType::C128.itemsize(), 16);
        assert_eq!(DataType::BC32.itemsize(), 4);
        assert!(DataType::BC32.is_byte_sized());
        assert_eq!(DataType::F4_E2M1FN.itemsize(), 1);
        assert!(!DataType::F4_E2M1FN.is_byte_sized());
        // torch's packed float4 pairs: (17, 4, lanes = 2) fill one byte exactly.
        let packed_pair = DataType::new(DataTypeCode::FLOAT4_E2M1FN, 4, 2);
        assert_eq!(packed_pair.itemsize(), 1);
        assert!(packed_pair.is_byte_sized());
        assert_eq!(DataType::new(DataTypeCode::FLOAT, 32, 4).itemsize(), 16);
    }

    #[test]
    fn odd_and_unknown_types_print_their_numbers() {
        let unknown = DataType::new(DataTypeCode::from_code(99), 8, 1);
        assert_eq!(unknown.to_string(), "dtype(code=99, bits=8, lanes=1)");
        let bool16 = DataType::new(DataTypeCode::BOOL, 16, 1);
        assert_eq!(bool16.to_string(), "dtype(code=6, bits=16, lanes=1)");
        let f8_16 = DataType::new(DataTypeCode::FLOAT8_E5M2, 16, 1);
        assert_eq!(f8_16.to_string(), "dtype(code=12, bits=16, lanes=1)");
        assert_eq!(format!("{:?}", DataType::I32), "DataType(int32)");
    }
}
