//! Element types of the other producer protocols as DLPack dtypes: the
//! buffer protocol's struct format characters and the array interfaces'
//! typestrs, byte order included (a non-native order is refused, never
//! misread).

use crate::error::{Interface, InterfaceError};
use crate::{DataType, DataTypeCode};

/// The byte order an element type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Native,
    Little,
    Big,
}

impl Order {
    fn is_native(self) -> bool {
        match self {
            Self::Native => true,
            Self::Little => cfg!(target_endian = "little"),
            Self::Big => cfg!(target_endian = "big"),
        }
    }
}

/// The dtype of a buffer's elements from its struct `format` (`None`: `"B"`,
/// as the buffer protocol says) and `itemsize`. One element of a bool,
/// integer, float or complex type, in native or standard size, with an
/// optional byte-order prefix: `?`, `b h i l q n` and their unsigned
/// capitals, `e f d`, `Zf Zd`. The item size decides the width (`l` is 8
/// bytes natively on 64-bit Unix, 4 with a standard-size prefix), after a
/// check that the code allows it.
#[cfg_attr(all(Py_LIMITED_API, not(Py_3_11)), allow(dead_code))] // used by the buffer protocol
pub(crate) fn from_struct_format(
    format: &str,
    itemsize: usize,
) -> Result<DataType, InterfaceError> {
    let unsupported = || unsupported(Interface::Buffer, format);
    let (order, code) = match format.as_bytes().first() {
        Some(b'@') => (Order::Native, &format[1..]),
        Some(b'=') => (Order::Native, &format[1..]),
        Some(b'<') => (Order::Little, &format[1..]),
        Some(b'>' | b'!') => (Order::Big, &format[1..]),
        _ => (Order::Native, format),
    };
    let (kind, widths): (DataTypeCode, &[usize]) = match code {
        "?" => (DataTypeCode::BOOL, &[1]),
        "b" => (DataTypeCode::INT, &[1]),
        "B" => (DataTypeCode::UINT, &[1]),
        "h" => (DataTypeCode::INT, &[2]),
        "H" => (DataTypeCode::UINT, &[2]),
        "i" | "l" | "q" | "n" => (DataTypeCode::INT, &[4, 8]),
        "I" | "L" | "Q" | "N" => (DataTypeCode::UINT, &[4, 8]),
        "e" => (DataTypeCode::FLOAT, &[2]),
        "f" => (DataTypeCode::FLOAT, &[4]),
        "d" => (DataTypeCode::FLOAT, &[8]),
        "Zf" => (DataTypeCode::COMPLEX, &[8]),
        "Zd" => (DataTypeCode::COMPLEX, &[16]),
        _ => return Err(unsupported()),
    };
    if !widths.contains(&itemsize) {
        return Err(unsupported());
    }
    check_order(order, itemsize, kind, Interface::Buffer, format)?;
    Ok(DataType::new(kind, (itemsize * 8) as u8, 1))
}

/// The dtype of an `__array_interface__` or `__cuda_array_interface__`
/// typestr: a byte order (`<`, `>`, `|`, `=`), a kind (`b` bool, `i`, `u`,
/// `f`, `c`) and the size in bytes. Objects, strings, bytes, void, dates and
/// times have no DLPack dtype.
pub(crate) fn from_typestr(
    typestr: &str,
    interface: Interface,
) -> Result<DataType, InterfaceError> {
    let unsupported = || unsupported(interface, typestr);
    let bytes = typestr.as_bytes();
    let order = match bytes.first() {
        Some(b'<') => Order::Little,
        Some(b'>') => Order::Big,
        Some(b'|' | b'=') => Order::Native,
        _ => return Err(unsupported()),
    };
    let kind = match bytes.get(1) {
        Some(b'b') => DataTypeCode::BOOL,
        Some(b'i') => DataTypeCode::INT,
        Some(b'u') => DataTypeCode::UINT,
        Some(b'f') => DataTypeCode::FLOAT,
        Some(b'c') => DataTypeCode::COMPLEX,
        _ => return Err(unsupported()),
    };
    let itemsize: usize = typestr[2..].parse().map_err(|_| unsupported())?;
    let allowed: &[usize] = match kind {
        DataTypeCode::BOOL => &[1],
        DataTypeCode::FLOAT => &[2, 4, 8],
        DataTypeCode::COMPLEX => &[8, 16],
        _ => &[1, 2, 4, 8],
    };
    if !allowed.contains(&itemsize) {
        return Err(unsupported());
    }
    check_order(order, itemsize, kind, interface, typestr)?;
    Ok(DataType::new(kind, (itemsize * 8) as u8, 1))
}

/// The error for an element type of no DLPack dtype (one copy for every
/// way a format or typestr can be refused).
#[cold]
#[inline(never)]
fn unsupported(interface: Interface, format: &str) -> InterfaceError {
    InterfaceError::UnsupportedFormat {
        interface,
        format: format.to_owned(),
    }
}

/// Single bytes have no byte order; wider elements must be in native order.
fn check_order(
    order: Order,
    itemsize: usize,
    kind: DataTypeCode,
    interface: Interface,
    format: &str,
) -> Result<(), InterfaceError> {
    let lane = if kind == DataTypeCode::COMPLEX {
        itemsize / 2
    } else {
        itemsize
    };
    if lane > 1 && !order.is_native() {
        return Err(InterfaceError::ByteOrder {
            interface,
            format: format.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_formats_map_to_dtypes_by_code_and_size() {
        let cases: &[(&str, usize, DataType)] = &[
            ("?", 1, DataType::BOOL),
            ("b", 1, DataType::I8),
            ("B", 1, DataType::U8),
            (">b", 1, DataType::I8),
            ("<h", 2, DataType::I16),
            ("H", 2, DataType::U16),
            ("i", 4, DataType::I32),
            ("=l", 4, DataType::I32),
            ("l", 8, DataType::I64),
            ("q", 8, DataType::I64),
            ("@Q", 8, DataType::U64),
            ("n", 8, DataType::I64),
            ("e", 2, DataType::F16),
            ("f", 4, DataType::F32),
            ("<d", 8, DataType::F64),
            ("Zf", 8, DataType::C64),
            ("Zd", 16, DataType::C128),
        ];
        for &(format, itemsize, dtype) in cases {
            assert_eq!(from_struct_format(format, itemsize), Ok(dtype), "{format}");
        }
    }

    #[test]
    fn struct_formats_without_a_dtype_or_in_foreign_order_are_refused() {
        for (format, itemsize) in [
            ("P", 8),
            ("3f", 12),
            ("c", 1),
            ("g", 16),
            ("T{i}", 4),
            ("f", 8),
            ("", 1),
        ] {
            assert!(
                matches!(
                    from_struct_format(format, itemsize),
                    Err(InterfaceError::UnsupportedFormat { .. })
                ),
                "{format}"
            );
        }
        let foreign = if cfg!(target_endian = "little") {
            ">"
        } else {
            "<"
        };
        for (code, itemsize) in [("f", 4), ("h", 2), ("Zd", 16)] {
            let format = format!("{foreign}{code}");
            assert_eq!(
                from_struct_format(&format, itemsize),
                Err(InterfaceError::ByteOrder {
                    interface: Interface::Buffer,
                    format: format.clone()
                })
            );
        }
        assert_eq!(
            from_struct_format("!i", 4).unwrap_err().to_string(),
            "the buffer protocol describes elements of format '!i' in non-native byte order: \
             expected native (little-endian) order; swap the bytes first"
        );
    }

    #[test]
    fn typestrs_map_to_dtypes_and_refuse_what_dlpack_cannot_hold() {
        let interface = Interface::ArrayInterface;
        assert_eq!(from_typestr("<f4", interface), Ok(DataType::F32));
        assert_eq!(from_typestr("|b1", interface), Ok(DataType::BOOL));
        assert_eq!(from_typestr("|u1", interface), Ok(DataType::U8));
        assert_eq!(from_typestr(">i1", interface), Ok(DataType::I8));
        assert_eq!(from_typestr("<c16", interface), Ok(DataType::C128));
        assert_eq!(from_typestr("<f2", interface), Ok(DataType::F16));
        for typestr in [
            "|O8", "<U4", "|S3", "|V8", "<M8", "<m8", "<f16", "<i3", "f4", "<f", "",
        ] {
            assert!(
                matches!(
                    from_typestr(typestr, interface),
                    Err(InterfaceError::UnsupportedFormat { .. })
                ),
                "{typestr}"
            );
        }
        assert_eq!(
            from_typestr(">f8", interface).unwrap_err().to_string(),
            "__array_interface__ describes elements of format '>f8' in non-native byte order: \
             expected native (little-endian) order; swap the bytes first"
        );
    }
}
