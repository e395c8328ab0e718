//! The column tree of [`super::Expander`]: how each [`super::Node`] reads one JSON value
//! into its buffers (structs, lists, maps with duplicate keys), truncates back on a
//! record that is not JSON, and builds its Arrow array.

use super::*;

/// Skips a value the schema does not take. jiter's skip does not check that strings are
/// UTF-8, so the skipped text is checked here (invalid UTF-8 is not JSON).
pub(super) fn skip(j: &mut Jiter, peek: Peek) -> Result<(), NotJson> {
    let start = j.current_index();
    j.known_skip(peek)?;
    let skipped = j.slice_to_current(start);
    if !skipped.is_ascii() {
        std::str::from_utf8(skipped).map_err(|_| NotJson)?;
    }
    Ok(())
}

/// The number's text if the value is a number; anything else is skipped.
pub(super) fn number<'a>(j: &'a mut Jiter, peek: Peek) -> Result<Option<&'a [u8]>, NotJson> {
    if peek.is_num() {
        Ok(Some(j.known_number_bytes(peek)?))
    } else {
        skip(j, peek)?;
        Ok(None)
    }
}

/// The string if the value is a string; anything else is skipped.
pub(super) fn string<'a>(j: &'a mut Jiter, peek: Peek) -> Result<Option<&'a str>, NotJson> {
    if peek == Peek::String {
        Ok(Some(j.known_str()?))
    } else {
        skip(j, peek)?;
        Ok(None)
    }
}

/// Appends `value` if there is one.
pub(super) fn put<T>(values: &mut Vec<T>, value: Option<T>) -> bool {
    match value {
        Some(v) => {
            values.push(v);
            true
        }
        None => false,
    }
}

/// Whether the null buffer is needed.
pub(super) fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    if valid.iter().all(|v| *v) {
        None
    } else {
        Some(NullBuffer::from(valid))
    }
}

pub(super) fn offsets_i32(offsets: Vec<usize>) -> Result<OffsetBuffer<i32>, ArrowError> {
    let offsets = offsets
        .into_iter()
        .map(i32::try_from)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ArrowError::ComputeError("batch too large for i32 offsets".into()))?;
    Ok(OffsetBuffer::new(ScalarBuffer::from(offsets)))
}

pub(super) fn offsets_i64(offsets: Vec<usize>) -> Result<OffsetBuffer<i64>, ArrowError> {
    let offsets = offsets
        .into_iter()
        .map(i64::try_from)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ArrowError::ComputeError("batch too large for i64 offsets".into()))?;
    Ok(OffsetBuffer::new(ScalarBuffer::from(offsets)))
}

impl Node {
    pub(super) fn leaf(dt: &DataType, data: Data) -> Node {
        Node {
            dt: dt.clone(),
            flat: false,
            valid: Vec::new(),
            data,
        }
    }

    /// The node for a column of Iceberg type `ty` written as Arrow type `dt`, or `None`
    /// when `dt` is not what `ty` maps to (names, nullability and types compared; field
    /// metadata not, since the target assigns its own ids).
    pub(super) fn build(ty: &Type, dt: &DataType) -> Option<Node> {
        use PrimitiveType as P;
        let data = match (ty, dt) {
            (Type::Primitive(P::Boolean), DataType::Boolean) => Data::Bool(Vec::new()),
            (Type::Primitive(P::Int), DataType::Int32) => Data::Int(Vec::new()),
            (Type::Primitive(P::Long), DataType::Int64) => Data::Long(Vec::new()),
            (Type::Primitive(P::Float), DataType::Float32) => Data::Float(Vec::new()),
            (Type::Primitive(P::Double), DataType::Float64) => Data::Double(Vec::new()),
            (Type::Primitive(P::Decimal { precision, scale }), DataType::Decimal128(p, s))
                if *precision == u32::from(*p) && i64::from(*scale) == i64::from(*s) =>
            {
                Data::Decimal {
                    precision: *p,
                    scale: *s,
                    values: Vec::new(),
                }
            }
            (Type::Primitive(P::Date), DataType::Date32) => Data::Date(Vec::new()),
            (Type::Primitive(P::Time), DataType::Time64(TimeUnit::Microsecond)) => {
                Data::Time(Vec::new())
            }
            (Type::Primitive(P::Timestamp), DataType::Timestamp(TimeUnit::Microsecond, None))
            | (
                Type::Primitive(P::Timestamptz),
                DataType::Timestamp(TimeUnit::Microsecond, Some(_)),
            ) => Data::Timestamp(Vec::new()),
            (Type::Primitive(P::String), DataType::Utf8) => Data::String(Bytes::new()),
            (Type::Primitive(P::Binary), DataType::LargeBinary) => Data::Binary(Bytes::new()),
            (Type::Primitive(P::Fixed(len)), DataType::FixedSizeBinary(width))
                if u64::try_from(*width).ok() == Some(*len) =>
            {
                Data::Fixed {
                    width: usize::try_from(*width).ok()?,
                    bytes: Vec::new(),
                }
            }
            (Type::Primitive(P::Uuid), DataType::FixedSizeBinary(16)) => Data::Uuid(Vec::new()),
            (Type::Struct(s), DataType::Struct(fields)) if s.fields().len() == fields.len() => {
                let mut children = Vec::with_capacity(fields.len());
                for (field, arrow) in s.fields().iter().zip(fields.iter()) {
                    if field.name != *arrow.name() || !arrow.is_nullable() {
                        return None;
                    }
                    children.push(Node::build(&field.field_type, arrow.data_type())?);
                }
                let names = s.fields().iter().map(|f| f.name.as_str().into()).collect();
                Data::Struct(StructNode::new(names, children, fields.clone()))
            }
            (Type::List(l), DataType::List(field)) if field.is_nullable() => Data::List(ListNode {
                offsets: vec![0],
                child: Box::new(Node::build(&l.element_field.field_type, field.data_type())?),
                field: field.clone(),
            }),
            (Type::Map(m), DataType::Map(entries, ordered)) => {
                let DataType::Struct(kv) = entries.data_type() else {
                    return None;
                };
                if kv.len() != 2 || !kv[1].is_nullable() {
                    return None;
                }
                Data::Map(Box::new(MapNode {
                    offsets: vec![0],
                    keys: Box::new(Node::build(&m.key_field.field_type, kv[0].data_type())?),
                    values: Box::new(Node::build(&m.value_field.field_type, kv[1].data_type())?),
                    entries: entries.clone(),
                    entry_fields: kv.clone(),
                    ordered: *ordered,
                    contrib: Vec::new(),
                    order: Vec::new(),
                    dups: Vec::new(),
                }))
            }
            _ => return None,
        };
        Some(Node::leaf(dt, data))
    }

    /// Slots written.
    pub(super) fn len(&self) -> usize {
        match &self.data {
            // A flattened struct has at least one field (the layout refuses empty ones).
            Data::Struct(s) if self.flat => s.children.first().map_or(0, Node::len),
            _ => self.valid.len(),
        }
    }

    pub(super) fn push_null(&mut self) {
        match &mut self.data {
            Data::Bool(v) => v.push(false),
            Data::Int(v) | Data::Date(v) => v.push(0),
            Data::Long(v) | Data::Time(v) | Data::Timestamp(v) => v.push(0),
            Data::Float(v) => v.push(0.0),
            Data::Double(v) => v.push(0.0),
            Data::Decimal { values, .. } => values.push(0),
            Data::String(b) | Data::Binary(b) => b.offsets.push(b.bytes.len()),
            Data::Fixed { width, bytes } => bytes.resize(bytes.len() + *width, 0),
            Data::Uuid(bytes) => bytes.resize(bytes.len() + 16, 0),
            Data::Struct(s) => {
                for child in &mut s.children {
                    child.push_null();
                }
                if self.flat {
                    return;
                }
            }
            Data::List(l) => l.offsets.push(l.child.len()),
            Data::Map(m) => m.offsets.push(m.keys.len()),
        }
        self.valid.push(false);
    }

    /// Drops the slots from `n` on (and what they nest). Every part of the node may be
    /// longer than `n` (a row cut short anywhere), none shorter.
    pub(super) fn truncate(&mut self, n: usize) {
        self.valid.truncate(n);
        match &mut self.data {
            Data::Bool(v) => v.truncate(n),
            Data::Int(v) | Data::Date(v) => v.truncate(n),
            Data::Long(v) | Data::Time(v) | Data::Timestamp(v) => v.truncate(n),
            Data::Float(v) => v.truncate(n),
            Data::Double(v) => v.truncate(n),
            Data::Decimal { values, .. } => values.truncate(n),
            Data::String(b) | Data::Binary(b) => {
                b.offsets.truncate(n + 1);
                b.bytes.truncate(b.offsets[n]);
            }
            Data::Fixed { width, bytes } => bytes.truncate(n * *width),
            Data::Uuid(bytes) => bytes.truncate(n * 16),
            Data::Struct(s) => {
                for child in &mut s.children {
                    child.truncate(n);
                }
            }
            Data::List(l) => {
                l.offsets.truncate(n + 1);
                l.child.truncate(l.offsets[n]);
            }
            Data::Map(m) => {
                m.offsets.truncate(n + 1);
                m.keys.truncate(m.offsets[n]);
                m.values.truncate(m.offsets[n]);
            }
        }
    }

    /// Removes slot `i` (and what it nests) from a complete node: a map entry that a
    /// later duplicate key replaces. Rare, so linear.
    pub(super) fn remove(&mut self, i: usize) {
        self.remove_range(i, i + 1);
    }

    pub(super) fn remove_range(&mut self, start: usize, end: usize) {
        fn nested(offsets: &mut Vec<usize>, start: usize, end: usize) -> (usize, usize) {
            let (from, to) = (offsets[start], offsets[end]);
            offsets.drain(start + 1..end + 1);
            for o in &mut offsets[start + 1..] {
                *o -= to - from;
            }
            (from, to)
        }
        if !self.flat {
            self.valid.drain(start..end);
        }
        match &mut self.data {
            Data::Bool(v) => drop(v.drain(start..end)),
            Data::Int(v) | Data::Date(v) => drop(v.drain(start..end)),
            Data::Long(v) | Data::Time(v) | Data::Timestamp(v) => drop(v.drain(start..end)),
            Data::Float(v) => drop(v.drain(start..end)),
            Data::Double(v) => drop(v.drain(start..end)),
            Data::Decimal { values, .. } => drop(values.drain(start..end)),
            Data::String(b) | Data::Binary(b) => {
                let (from, to) = nested(&mut b.offsets, start, end);
                b.bytes.drain(from..to);
            }
            Data::Fixed { width, bytes } => drop(bytes.drain(start * *width..end * *width)),
            Data::Uuid(bytes) => drop(bytes.drain(start * 16..end * 16)),
            Data::Struct(s) => {
                for child in &mut s.children {
                    child.remove_range(start, end);
                }
            }
            Data::List(l) => {
                let (from, to) = nested(&mut l.offsets, start, end);
                l.child.remove_range(from, to);
            }
            Data::Map(m) => {
                let (from, to) = nested(&mut m.offsets, start, end);
                m.keys.remove_range(from, to);
                m.values.remove_range(from, to);
            }
        }
    }

    /// Reads the value that `peek` starts into a new slot: the value, or null when it is
    /// JSON null or does not fit the type (then the row is marked). `Err` only when the
    /// record is not JSON.
    pub(super) fn parse(
        &mut self,
        j: &mut Jiter,
        peek: Peek,
        row: &mut Row,
    ) -> Result<(), NotJson> {
        if peek == Peek::Null {
            j.known_null()?;
            self.push_null();
            return Ok(());
        }
        let fits = match &mut self.data {
            Data::Bool(v) => match peek {
                Peek::True | Peek::False => {
                    v.push(j.known_bool(peek)?);
                    true
                }
                _ => {
                    skip(j, peek)?;
                    false
                }
            },
            Data::Int(v) => put(v, number(j, peek)?.and_then(parse_i32)),
            Data::Long(v) => put(v, number(j, peek)?.and_then(parse_int)),
            Data::Float(v) => put(
                v,
                number(j, peek)?.and_then(|t| parse_float(t, f32::is_finite)),
            ),
            Data::Double(v) => put(
                v,
                number(j, peek)?.and_then(|t| parse_float(t, f64::is_finite)),
            ),
            Data::Decimal {
                precision,
                scale,
                values,
            } => {
                let v = if peek == Peek::String {
                    parse_decimal(j.known_str()?.as_bytes(), *precision, *scale)
                } else {
                    number(j, peek)?.and_then(|t| parse_decimal(t, *precision, *scale))
                };
                put(values, v)
            }
            Data::Date(v) => {
                let days = if peek == Peek::String {
                    parse_date(j.known_str()?.as_bytes())
                } else {
                    number(j, peek)?.and_then(parse_i32)
                };
                put(v, days)
            }
            Data::Time(v) => {
                let micros = if peek == Peek::String {
                    parse_time(j.known_str()?.as_bytes())
                } else {
                    number(j, peek)?
                        .and_then(parse_int)
                        .filter(|m| (0..MICROS_PER_DAY).contains(m))
                };
                put(v, micros)
            }
            Data::Timestamp(v) => {
                let micros = if peek == Peek::String {
                    parse_timestamp(j.known_str()?.as_bytes())
                } else {
                    number(j, peek)?
                        .and_then(parse_int)
                        .and_then(|ms| ms.checked_mul(1000))
                };
                put(v, micros)
            }
            Data::String(b) => match string(j, peek)? {
                Some(s) => {
                    b.bytes.extend_from_slice(s.as_bytes());
                    b.offsets.push(b.bytes.len());
                    true
                }
                None => false,
            },
            Data::Binary(b) => match string(j, peek)? {
                Some(s) if put_base64(&mut b.bytes, s, None) => {
                    b.offsets.push(b.bytes.len());
                    true
                }
                _ => false,
            },
            Data::Fixed { width, bytes } => {
                matches!(string(j, peek)?, Some(s) if put_base64(bytes, s, Some(*width)))
            }
            Data::Uuid(bytes) => match string(j, peek)?.and_then(parse_uuid) {
                Some(u) => {
                    bytes.extend_from_slice(&u);
                    true
                }
                None => false,
            },
            Data::Struct(s) => {
                if peek == Peek::Object {
                    let base = if self.flat {
                        s.children.first().map_or(0, Node::len)
                    } else {
                        self.valid.len()
                    };
                    object(s, base, j, row)?;
                    true
                } else {
                    skip(j, peek)?;
                    false
                }
            }
            Data::List(l) => {
                if peek == Peek::Array {
                    let mut next = j.known_array()?;
                    while let Some(peek) = next {
                        l.child.parse(j, peek, row)?;
                        next = j.array_step()?;
                    }
                    l.offsets.push(l.child.len());
                    true
                } else {
                    skip(j, peek)?;
                    false
                }
            }
            Data::Map(m) => {
                if peek == Peek::Object {
                    map(m, j, row)?;
                    true
                } else {
                    skip(j, peek)?;
                    false
                }
            }
        };
        if !fits {
            row.mismatch = true;
            self.push_null();
        } else if !self.flat {
            self.valid.push(true);
        }
        Ok(())
    }

    /// Appends map key `key` converted to the key type; false if it does not convert.
    pub(super) fn push_key(&mut self, key: &str) -> bool {
        let fits = match &mut self.data {
            Data::String(b) => {
                b.bytes.extend_from_slice(key.as_bytes());
                b.offsets.push(b.bytes.len());
                true
            }
            Data::Int(v) => put(v, parse_i32(key.as_bytes())),
            Data::Long(v) => put(v, parse_int(key.as_bytes())),
            // The layout allows no other key type.
            _ => false,
        };
        if fits {
            self.valid.push(true);
        }
        fits
    }

    /// Whether map keys `a` and `b` are equal.
    pub(super) fn key_eq(&self, a: usize, b: usize) -> bool {
        match &self.data {
            Data::String(s) => s.value(a) == s.value(b),
            Data::Int(v) => v[a] == v[b],
            Data::Long(v) => v[a] == v[b],
            _ => false,
        }
    }

    pub(super) fn key_cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        match &self.data {
            Data::String(s) => s.value(a).cmp(s.value(b)),
            Data::Int(v) => v[a].cmp(&v[b]),
            Data::Long(v) => v[a].cmp(&v[b]),
            _ => std::cmp::Ordering::Equal,
        }
    }

    /// The columns of this node: itself, or for a flattened struct those of its fields.
    pub(super) fn columns(&mut self, out: &mut Vec<ArrayRef>) -> Result<(), ArrowError> {
        match &mut self.data {
            Data::Struct(s) if self.flat => {
                for child in &mut s.children {
                    child.columns(out)?;
                }
            }
            _ => out.push(self.finish()?),
        }
        Ok(())
    }

    /// The slots as an array of the target's type; the node is empty afterwards (and
    /// consistent even when this fails half way).
    pub(super) fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        let nulls = nulls(std::mem::take(&mut self.valid));
        use std::mem::take;
        Ok(match &mut self.data {
            Data::Bool(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(take(v)), nulls)),
            Data::Int(v) => Arc::new(Int32Array::try_new(ScalarBuffer::from(take(v)), nulls)?),
            Data::Long(v) => Arc::new(Int64Array::try_new(ScalarBuffer::from(take(v)), nulls)?),
            Data::Float(v) => Arc::new(Float32Array::try_new(ScalarBuffer::from(take(v)), nulls)?),
            Data::Double(v) => Arc::new(Float64Array::try_new(ScalarBuffer::from(take(v)), nulls)?),
            Data::Decimal {
                precision,
                scale,
                values,
            } => Arc::new(
                Decimal128Array::try_new(ScalarBuffer::from(take(values)), nulls)?
                    .with_precision_and_scale(*precision, *scale)?,
            ),
            Data::Date(v) => Arc::new(Date32Array::try_new(ScalarBuffer::from(take(v)), nulls)?),
            Data::Time(v) => Arc::new(Time64MicrosecondArray::try_new(
                ScalarBuffer::from(take(v)),
                nulls,
            )?),
            Data::Timestamp(v) => {
                let tz = match &self.dt {
                    DataType::Timestamp(_, tz) => tz.clone(),
                    _ => None,
                };
                Arc::new(
                    TimestampMicrosecondArray::try_new(ScalarBuffer::from(take(v)), nulls)?
                        .with_timezone_opt(tz),
                )
            }
            Data::String(b) => {
                let offsets = std::mem::replace(&mut b.offsets, vec![0]);
                Arc::new(StringArray::try_new(
                    offsets_i32(offsets)?,
                    Buffer::from_vec(take(&mut b.bytes)),
                    nulls,
                )?)
            }
            Data::Binary(b) => {
                let offsets = std::mem::replace(&mut b.offsets, vec![0]);
                Arc::new(LargeBinaryArray::try_new(
                    offsets_i64(offsets)?,
                    Buffer::from_vec(take(&mut b.bytes)),
                    nulls,
                )?)
            }
            Data::Fixed { width, bytes } => {
                let width = i32::try_from(*width)
                    .map_err(|_| ArrowError::ComputeError("fixed width too large".into()))?;
                Arc::new(FixedSizeBinaryArray::try_new(
                    width,
                    Buffer::from_vec(take(bytes)),
                    nulls,
                )?)
            }
            Data::Uuid(bytes) => Arc::new(FixedSizeBinaryArray::try_new(
                16,
                Buffer::from_vec(take(bytes)),
                nulls,
            )?),
            Data::Struct(s) => {
                let mut children = Vec::with_capacity(s.children.len());
                for child in &mut s.children {
                    children.push(child.finish()?);
                }
                Arc::new(StructArray::try_new(s.fields.clone(), children, nulls)?)
            }
            Data::List(l) => {
                let offsets = std::mem::replace(&mut l.offsets, vec![0]);
                let child = l.child.finish()?;
                Arc::new(ListArray::try_new(
                    l.field.clone(),
                    offsets_i32(offsets)?,
                    child,
                    nulls,
                )?)
            }
            Data::Map(m) => {
                let offsets = std::mem::replace(&mut m.offsets, vec![0]);
                let keys = m.keys.finish()?;
                let values = m.values.finish()?;
                let entries =
                    StructArray::try_new(m.entry_fields.clone(), vec![keys, values], None)?;
                Arc::new(MapArray::try_new(
                    m.entries.clone(),
                    offsets_i32(offsets)?,
                    entries,
                    nulls,
                    m.ordered,
                )?)
            }
        })
    }
}

/// Reads the fields of the JSON object whose first key is next into the fields of `s`,
/// each of whose children has `base` slots before it.
pub(super) fn object(
    s: &mut StructNode,
    base: usize,
    j: &mut Jiter,
    row: &mut Row,
) -> Result<(), NotJson> {
    let mut hint = 0;
    let mut key = j.known_object()?;
    while let Some(k) = key {
        let field = s.lookup(k, hint);
        let peek = j.peek()?;
        match field {
            Some(i) => {
                hint = i + 1;
                let child = &mut s.children[i];
                if child.len() > base {
                    // A repeated key: the last value wins, and the row says so.
                    child.truncate(base);
                    let (missing, excess) = s.contrib[i];
                    row.missing -= missing;
                    row.excess -= excess;
                    row.mismatch = true;
                }
                let (missing, excess) = (row.missing, row.excess);
                child.parse(j, peek, row)?;
                s.contrib[i] = (row.missing - missing, row.excess - excess);
            }
            None => {
                row.excess += 1;
                skip(j, peek)?;
            }
        }
        key = j.next_key()?;
    }
    for child in &mut s.children {
        if child.len() == base {
            child.push_null();
            row.missing += 1;
        }
    }
    Ok(())
}

/// Reads the entries of the JSON object whose first key is next into map `m`.
pub(super) fn map(m: &mut MapNode, j: &mut Jiter, row: &mut Row) -> Result<(), NotJson> {
    let start = m.keys.len();
    m.contrib.clear();
    let mut key = j.known_object()?;
    while let Some(k) = key {
        let converted = m.keys.push_key(k);
        let peek = j.peek()?;
        if converted {
            let (missing, excess) = (row.missing, row.excess);
            m.values.parse(j, peek, row)?;
            m.contrib.push((row.missing - missing, row.excess - excess));
        } else {
            // A key that does not convert drops its entry.
            row.mismatch = true;
            skip(j, peek)?;
        }
        key = j.next_key()?;
    }
    let end = m.keys.len();
    if end - start > 1 {
        dedup(m, start, end, row);
    }
    m.offsets.push(m.keys.len());
    Ok(())
}

/// Most repeated keys one JSON object for a map may have and keep its entries.
pub(super) const MAX_MAP_DUPLICATES: usize = 16;

/// Removes the entries in `start..end` whose key comes again later (the last value
/// wins), marking the row when there are any; with more than [`MAX_MAP_DUPLICATES`]
/// of them, every entry.
pub(super) fn dedup(m: &mut MapNode, start: usize, end: usize, row: &mut Row) {
    m.dups.clear();
    if end - start <= SCAN_FIELDS {
        for a in start..end {
            if (a + 1..end).any(|b| m.keys.key_eq(a, b)) {
                m.dups.push(a);
            }
        }
    } else {
        m.order.clear();
        m.order.extend(start..end);
        let keys = &m.keys;
        m.order
            .sort_unstable_by(|&a, &b| keys.key_cmp(a, b).then(a.cmp(&b)));
        for w in m.order.windows(2) {
            if keys.key_eq(w[0], w[1]) {
                m.dups.push(w[0]);
            }
        }
        m.dups.sort_unstable();
    }
    if m.dups.is_empty() {
        return;
    }
    row.mismatch = true;
    if m.dups.len() > MAX_MAP_DUPLICATES {
        // Each removal shifts the entries after it, so many would cost entries x
        // duplicates (measured: 16,000 keys each twice, 0.77 s in a debug build); past
        // the bound the map keeps no entry at all, in one linear removal.
        m.keys.remove_range(start, end);
        m.values.remove_range(start, end);
        for &(missing, excess) in &m.contrib[..end - start] {
            row.missing -= missing;
            row.excess -= excess;
        }
        return;
    }
    // From the back, so the indexes still to remove stay put.
    for &i in m.dups.iter().rev() {
        m.keys.remove(i);
        m.values.remove(i);
        let (missing, excess) = m.contrib[i - start];
        row.missing -= missing;
        row.excess -= excess;
    }
}

/// The flattened struct of `fields` (the schema's root, or a flattened struct field).
pub(super) fn tree_node(fields: &[TreeField], nodes: &mut [Option<Node>]) -> TableResult<Node> {
    let mut children = Vec::with_capacity(fields.len());
    for field in fields {
        children.push(match &field.shape {
            Shape::Column(i) => nodes
                .get_mut(*i)
                .and_then(Option::take)
                .ok_or_else(|| TableError::Task(format!("expansion column {i} missing")))?,
            Shape::Flattened(fields) => tree_node(fields, nodes)?,
        });
    }
    let names = fields.iter().map(|f| f.name.as_str().into()).collect();
    Ok(Node {
        dt: DataType::Null,
        flat: true,
        valid: Vec::new(),
        data: Data::Struct(StructNode::new(names, children, Fields::empty())),
    })
}

/// The top-level object of one record into the schema's `root`.
pub(super) fn document(root: &mut Node, j: &mut Jiter, row_index: usize) -> Result<Row, NotJson> {
    let mut row = Row::default();
    if j.peek()? != Peek::Object {
        return Err(NotJson);
    }
    let Data::Struct(s) = &mut root.data else {
        return Err(NotJson);
    };
    object(s, row_index, j, &mut row)?;
    j.finish()?;
    Ok(row)
}

pub(super) fn push_int(node: &mut Node, value: Option<i32>) {
    if let Data::Int(v) = &mut node.data {
        v.push(value.unwrap_or(0));
        node.valid.push(value.is_some());
    }
}

pub(super) fn push_long(node: &mut Node, value: i64) {
    if let Data::Long(v) | Data::Timestamp(v) = &mut node.data {
        v.push(value);
        node.valid.push(true);
    }
}
