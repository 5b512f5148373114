//! Chunk grids: `regular` (every chunk `chunk_shape`) and zarr-extensions' `rectilinear`
//! (`kind: "inline"`, per axis an edge length or a list of edge lengths and run-length
//! `[size, count]` entries), as zarr-python 3.2+ writes them.
//!
//! Reads are decoded in *read chunks* that tile the array regularly, so that everything above
//! the chunk reader (the array file's layout, slices, previews, the cache directory) sees one
//! regular grid: for a rectilinear grid, the read chunk along an axis is the greatest common
//! divisor of its edge lengths, so each read chunk lies inside one stored chunk.

use super::v2::MAX_RANK;
use super::MetaError;
use serde_json::{json, Map, Value};

/// The most chunks all axes of a rectilinear grid may list together (run-length entries
/// expanded): 8 MiB of edge lengths.
const MAX_EDGES: u64 = 1 << 20;

/// How an array is cut into stored chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkGrid {
    /// Every chunk has the array's `chunk_shape`.
    Regular,
    /// Per axis, the edge length of each chunk in order (enough chunks to cover the axis).
    Rectilinear(Box<Edges>),
}

/// The edge lengths of a rectilinear grid, with each chunk's end along its axis for lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edges {
    lengths: Vec<Vec<u64>>,
    ends: Vec<Vec<u64>>,
}

impl Edges {
    fn new(lengths: Vec<Vec<u64>>) -> Self {
        let ends = lengths
            .iter()
            .map(|axis| {
                axis.iter()
                    .scan(0u64, |end, &len| {
                        *end += len;
                        Some(*end)
                    })
                    .collect()
            })
            .collect();
        Edges { lengths, ends }
    }

    /// Per axis, the edge length of each chunk.
    pub fn lengths(&self) -> &[Vec<u64>] {
        &self.lengths
    }
}

impl ChunkGrid {
    /// The stored chunk holding read chunk `read` (its grid index, read chunks of
    /// `read_shape`), and the read chunk's offset inside that stored chunk: `(chunk, offset,
    /// stored chunk shape)`. A regular grid stores read chunks as they are.
    pub fn stored_chunk(&self, read: &[u64], read_shape: &[u64]) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        match self {
            ChunkGrid::Regular => (read.to_vec(), vec![0; read.len()], read_shape.to_vec()),
            ChunkGrid::Rectilinear(edges) => {
                let mut chunk = Vec::with_capacity(read.len());
                let mut offset = Vec::with_capacity(read.len());
                let mut shape = Vec::with_capacity(read.len());
                for (ax, (&i, &g)) in read.iter().zip(read_shape).enumerate() {
                    let x = i * g;
                    // The first chunk ending after `x`.
                    let c = edges.ends[ax].partition_point(|&end| end <= x);
                    let len = edges.lengths[ax].get(c).copied().unwrap_or(g);
                    let end = edges.ends[ax].get(c).copied().unwrap_or(x + len);
                    chunk.push(c as u64);
                    offset.push(x - (end - len));
                    shape.push(len);
                }
                (chunk, offset, shape)
            }
        }
    }

    /// The largest stored chunk, per axis (`chunk_shape` for a regular grid).
    pub fn largest_chunk(&self, chunk_shape: &[u64]) -> Vec<u64> {
        match self {
            ChunkGrid::Regular => chunk_shape.to_vec(),
            ChunkGrid::Rectilinear(edges) => edges
                .lengths
                .iter()
                .map(|a| a.iter().copied().max().unwrap_or(1))
                .collect(),
        }
    }
}

/// The number of elements of `shape`: 0 when an axis is empty, however long the others (whose
/// product alone may overflow), else `None` on overflow.
pub fn element_count(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Greatest common divisor.
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One entry of a stored regular chunk shape, read as zarr-python 3.4 reads stored documents
/// (`core/metadata/repair.py`): an integer of at least 1; `true` as 1; 0 or `false` as `unit`,
/// the smallest chunk size the axis can have (1, or the inner chunk size of a shard): no chunk
/// can have been stored under a chunk size of 0, and `chunks=-1` on an empty axis wrote it.
pub(crate) fn chunk_size(value: &Value, unit: u64) -> Option<u64> {
    match value {
        Value::Bool(true) => Some(1),
        Value::Bool(false) => Some(unit),
        _ => match value.as_u64()? {
            0 => Some(unit),
            n => Some(n),
        },
    }
}

/// One entry of a sharding codec's inner chunk shape, read as zarr-python 3.4 reads it: a
/// positive integer, `true` as 1 (0 stays invalid there).
pub fn inner_chunk_size(value: &Value) -> Option<u64> {
    match value {
        Value::Bool(true) => Some(1),
        _ => value.as_u64().filter(|&n| n > 0),
    }
}

/// Parses a `regular` grid's configuration for an array of `shape` whose shards hold inner
/// chunks of `units` (empty when not sharded). The chunk shape is read as zarr-python 3.4
/// reads stored documents: each size as [`chunk_size`] reads it, and edge lists in some axes
/// (not all), as zarr-python 3.2 wrote them, make the grid the rectilinear grid they declare.
pub fn regular(
    config: &Map<String, Value>,
    shape: &[u64],
    units: &[u64],
) -> Result<(ChunkGrid, Vec<u64>), MetaError> {
    let list = config
        .get("chunk_shape")
        .and_then(Value::as_array)
        .ok_or_else(|| MetaError::field("chunk_shape", "missing or not a list"))?;
    if list.len() > MAX_RANK {
        return Err(MetaError::Shape(format!(
            "\"chunk_shape\" has {} dimensions, more than {MAX_RANK}",
            list.len()
        )));
    }
    let size = |axis: usize, v: &Value| {
        chunk_size(v, units.get(axis).copied().unwrap_or(1))
            .ok_or_else(|| MetaError::Shape(format!("\"chunk_shape\" holds {v}, not a size")))
    };
    let edge_axes = list.iter().filter(|v| v.is_array()).count();
    if edge_axes == 0 || edge_axes == list.len() || list.len() != shape.len() {
        let sizes = list.iter().enumerate().map(|(axis, v)| size(axis, v));
        return Ok((ChunkGrid::Regular, sizes.collect::<Result<_, _>>()?));
    }
    let axes = list
        .iter()
        .enumerate()
        .map(|(axis, v)| match v {
            Value::Array(_) => Ok(v.clone()),
            _ => size(axis, v).map(Value::from),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let config = json!({"kind": "inline", "chunk_shapes": axes});
    rectilinear(config.as_object().unwrap_or(&Map::new()), shape)
}

/// One stored edge length of a rectilinear grid, read as zarr-python 3.4 reads it: a positive
/// integer, `true` as 1, an integral float (`4.0`) as the integer it equals.
fn edge_length(value: &Value) -> Option<u64> {
    let n = match value {
        Value::Bool(true) => 1,
        _ => value.as_u64().or_else(|| {
            let f = value.as_f64()?;
            (f.fract() == 0.0 && f < u64::MAX as f64).then_some(f as u64)
        })?,
    };
    (n > 0).then_some(n)
}

/// Parses a `rectilinear` grid's configuration for an array of `shape`: the grid, and the read
/// chunk shape (per axis the greatest common divisor of the edge lengths that cover the axis).
pub fn rectilinear(
    config: &Map<String, Value>,
    shape: &[u64],
) -> Result<(ChunkGrid, Vec<u64>), MetaError> {
    let bad = |what: String| MetaError::Shape(format!("rectilinear chunk grid: {what}"));
    match config.get("kind").and_then(Value::as_str) {
        Some("inline") => {}
        other => return Err(bad(format!("kind {other:?} is not \"inline\""))),
    }
    let axes = config
        .get("chunk_shapes")
        .and_then(Value::as_array)
        .filter(|a| a.len() == shape.len())
        .ok_or_else(|| {
            bad(format!(
                "chunk_shapes is not a list of {} axes",
                shape.len()
            ))
        })?;
    let positive = |v: &Value| v.as_u64().filter(|&n| n > 0);
    let mut edges: Vec<Vec<u64>> = Vec::with_capacity(axes.len());
    let mut read = Vec::with_capacity(axes.len());
    let mut total = 0u64;
    for (axis, &len) in axes.iter().zip(shape) {
        let mut list = Vec::new();
        let mut covered = 0u64;
        let mut push = |size: u64, count: u64, list: &mut Vec<u64>| -> Result<(), MetaError> {
            for _ in 0..count {
                if covered >= len && !list.is_empty() {
                    return Ok(());
                }
                if total + list.len() as u64 >= MAX_EDGES {
                    return Err(bad(format!("more than {MAX_EDGES} chunks")));
                }
                list.push(size);
                // The chunks' ends along the axis must fit in a u64 (`Edges` sums them).
                covered = covered
                    .checked_add(size)
                    .ok_or_else(|| bad(format!("edge lengths {axis} add up past 2^64")))?;
            }
            Ok(())
        };
        match axis {
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Array(run) => match run.as_slice() {
                            [size, count] => push(
                                edge_length(size).ok_or_else(|| bad(format!("run {item}")))?,
                                positive(count).ok_or_else(|| bad(format!("run {item}")))?,
                                &mut list,
                            )?,
                            _ => return Err(bad(format!("run {item} is not [size, count]"))),
                        },
                        v => push(
                            edge_length(v).ok_or_else(|| bad(format!("edge length {v}")))?,
                            1,
                            &mut list,
                        )?,
                    }
                }
            }
            v => {
                let size = positive(v).ok_or_else(|| bad(format!("edge length {v}")))?;
                push(size, len.div_ceil(size).max(1), &mut list)?;
            }
        }
        if covered < len || list.is_empty() {
            return Err(bad(format!("edge lengths {axis} do not cover {len}")));
        }
        read.push(list.iter().fold(0, |g, &e| gcd(g, e)));
        total += list.len() as u64;
        edges.push(list);
    }
    Ok((ChunkGrid::Rectilinear(Box::new(Edges::new(edges))), read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(shapes: Value, shape: &[u64]) -> Result<(ChunkGrid, Vec<u64>), MetaError> {
        let config = json!({"kind": "inline", "chunk_shapes": shapes});
        rectilinear(config.as_object().unwrap(), shape)
    }

    #[test]
    fn expands_the_spec_example() {
        let (grid, read) = parse(
            json!([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]),
            &[6, 6, 6, 6, 6],
        )
        .unwrap();
        let edges = vec![
            vec![4, 4],
            vec![1, 2, 3],
            vec![4, 4],
            vec![1, 1, 1, 3],
            vec![4, 4],
        ];
        assert_eq!(grid, ChunkGrid::Rectilinear(Box::new(Edges::new(edges))));
        assert_eq!(read, [4, 1, 4, 1, 4]);
    }

    #[test]
    fn read_chunks_find_their_stored_chunk() {
        let (grid, read) = parse(json!([[6, 4, 2], [[3, 2], 9]]), &[12, 15]).unwrap();
        assert_eq!(read, [2, 3]);
        // Read chunk (4, 3): rows 8..10 (chunk 1 from row 6), columns 9..12 (chunk 2 from 6).
        assert_eq!(
            grid.stored_chunk(&[4, 3], &read),
            (vec![1, 2], vec![2, 3], vec![4, 9])
        );
        assert_eq!(grid.largest_chunk(&read), [6, 9]);
    }

    #[test]
    fn bad_grids_are_refused() {
        assert!(parse(json!([[2, 2]]), &[5]).is_err(), "does not cover");
        assert!(parse(json!([[0, 5]]), &[5]).is_err(), "zero edge");
        assert!(parse(json!([[[2, 0]]]), &[5]).is_err(), "zero count");
        assert!(parse(json!([5]), &[5, 5]).is_err(), "rank");
        assert!(parse(json!([[[1, 99999999999u64]]]), &[u64::MAX]).is_err());
        assert!(
            parse(json!([[5, u64::MAX]]), &[10]).is_err(),
            "ends overflow"
        );
        assert!(parse(json!([[u64::MAX - 1, 5]]), &[u64::MAX]).is_err());
        let config = json!({"kind": "file", "chunk_shapes": [5]});
        assert!(rectilinear(config.as_object().unwrap(), &[5]).is_err());
    }

    #[test]
    fn stored_chunk_sizes_read_as_zarr_python_reads_them() {
        let grid = |shapes: Value, shape: &[u64], units: &[u64]| {
            let config = json!({ "chunk_shape": shapes });
            regular(config.as_object().unwrap(), shape, units)
        };
        let sizes = |r: Result<(ChunkGrid, Vec<u64>), MetaError>| r.unwrap().1;
        assert_eq!(sizes(grid(json!([0, true, 5]), &[4, 4, 5], &[])), [1, 1, 5]);
        assert_eq!(sizes(grid(json!([false, 0]), &[0, 6], &[2, 3])), [2, 3]);
        assert!(grid(json!([-1]), &[4], &[]).is_err());
        assert!(grid(json!([2.0]), &[4], &[]).is_err());
        // zarr-python 3.2's regular grid with edge lists in some axes: rectilinear.
        let (g, read) = grid(json!([[4, 2], 2]), &[6, 4], &[]).unwrap();
        assert_eq!(
            g,
            ChunkGrid::Rectilinear(Box::new(Edges::new(vec![vec![4, 2], vec![2, 2]])))
        );
        assert_eq!(read, [2, 2]);
        assert!(
            grid(json!([[4, 2], [2, 2]]), &[6, 4], &[]).is_err(),
            "all axes"
        );
        // Edge lengths `true` and `4.0`; a run's count stays an integer.
        let (g, _) = parse(json!([[true, 3.0, [4.0, 1]]]), &[8]).unwrap();
        assert_eq!(
            g,
            ChunkGrid::Rectilinear(Box::new(Edges::new(vec![vec![1, 3, 4]])))
        );
        assert!(parse(json!([[[4, 2.0]]]), &[8]).is_err());
        assert!(parse(json!([[2.5, 6]]), &[8]).is_err());
    }
}
