//! Copies whose ranges overlap. xdal's copies have memmove's result (the
//! bytes the source held before the copy, wherever the two ranges share
//! memory), while a runtime's own copy command may refuse overlapping
//! ranges (OpenCL's `CL_MEM_COPY_OVERLAP`) or leave them undefined (CUDA).
//! A backend asks [`plan`] how to get memmove's result from copies that
//! never overlap: one copy, a few pieces in a safe order, or two copies
//! through a staging buffer where the pieces would be too many.

/// One copy of `bytes` bytes from `src` to `dst` whose ranges do not overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub dst: usize,
    pub src: usize,
    pub bytes: usize,
}

/// How to move bytes as memmove does with copies that must not overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Move {
    /// Nothing to copy: no bytes, or the source is the destination.
    Nothing,
    /// The ranges are disjoint: one copy.
    Direct,
    /// Copies to run in this order (each is disjoint, and none overwrites
    /// source bytes a later one still reads).
    Pieces(Vec<Piece>),
    /// Too many pieces: copy the source whole to a staging buffer of the
    /// copy's size, then from it to the destination.
    Staged,
}

/// Pieces worth enqueueing however small: a few enqueues cost less than a
/// staging allocation and a second pass over the bytes.
const FEW_PIECES: usize = 8;

/// A piece of at least this many bytes is worth its own enqueue, however
/// many there are: each enqueue costs microseconds, and a staged copy moves
/// every byte twice (and needs the memory).
const LARGE_PIECE: usize = 256 << 10;

/// How to copy `bytes` bytes from `src` to `dst` (addresses) with
/// memmove's result.
pub fn plan(dst: usize, src: usize, bytes: usize) -> Move {
    if bytes == 0 || dst == src {
        return Move::Nothing;
    }
    let distance = dst.abs_diff(src);
    if distance >= bytes {
        return Move::Direct;
    }
    // Pieces of `distance` bytes: a piece's destination ends where its
    // source begins (or begins where it ends), so it is disjoint. Towards
    // lower addresses the pieces go from the start, towards higher ones from
    // the end: a piece overwrites only source bytes a piece before it read.
    let count = bytes.div_ceil(distance);
    if count > FEW_PIECES && distance < LARGE_PIECE {
        return Move::Staged;
    }
    let piece = |offset: usize| Piece { dst: dst + offset, src: src + offset, bytes: distance.min(bytes - offset) };
    let offsets = (0..count).map(|i| i * distance);
    Move::Pieces(if dst < src { offsets.map(piece).collect() } else { offsets.rev().map(piece).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the plan on a buffer with copies that assert they are disjoint,
    /// and compares with memmove's result.
    fn check(len: usize, dst: usize, src: usize, bytes: usize) {
        let original: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut expected = original.clone();
        expected.copy_within(src..src + bytes, dst);
        let mut buffer = original.clone();
        let mut copy = |p: Piece| {
            assert!(p.dst.abs_diff(p.src) >= p.bytes, "{p:?} overlaps");
            let chunk = buffer[p.src..p.src + p.bytes].to_vec();
            buffer[p.dst..p.dst + p.bytes].copy_from_slice(&chunk);
        };
        match plan(dst, src, bytes) {
            Move::Nothing => assert!(bytes == 0 || dst == src),
            Move::Direct => copy(Piece { dst, src, bytes }),
            Move::Pieces(pieces) => {
                assert_eq!(pieces.iter().map(|p| p.bytes).sum::<usize>(), bytes);
                pieces.into_iter().for_each(&mut copy);
            }
            Move::Staged => {
                let staged = buffer[src..src + bytes].to_vec();
                buffer[dst..dst + bytes].copy_from_slice(&staged);
            }
        }
        assert_eq!(buffer, expected, "dst {dst} src {src} bytes {bytes}");
    }

    #[test]
    fn every_shift_either_way_gives_memmove_result() {
        for bytes in [1, 2, 7, 64, 1000] {
            for shift in [0, 1, 3, 63, 64, 125, 126, 999, 1000, 1001] {
                check(2200, 100, 100 + shift, bytes);
                check(2200, 100 + shift, 100, bytes);
            }
        }
    }

    #[test]
    fn small_shifts_of_large_copies_are_staged_large_ones_in_pieces() {
        assert_eq!(plan(0, 1, 1 << 20), Move::Staged);
        assert_eq!(
            plan(0, 1, 4),
            Move::Pieces(vec![
                Piece { dst: 0, src: 1, bytes: 1 },
                Piece { dst: 1, src: 2, bytes: 1 },
                Piece { dst: 2, src: 3, bytes: 1 },
                Piece { dst: 3, src: 4, bytes: 1 },
            ])
        );
        match plan(LARGE_PIECE, 0, 64 * LARGE_PIECE) {
            Move::Pieces(pieces) => {
                assert_eq!(pieces.len(), 64);
                assert_eq!(pieces[0].src, 63 * LARGE_PIECE, "upwards, the last piece goes first");
            }
            other => panic!("{other:?}"),
        }
        check(3 * LARGE_PIECE, LARGE_PIECE, 0, 2 * LARGE_PIECE);
        check(3 * LARGE_PIECE, 0, 5, 2 * LARGE_PIECE);
    }

    #[test]
    fn disjoint_and_empty_copies() {
        assert_eq!(plan(0, 10, 10), Move::Direct);
        assert_eq!(plan(10, 0, 10), Move::Direct);
        assert_eq!(plan(5, 5, 10), Move::Nothing);
        assert_eq!(plan(0, 5, 0), Move::Nothing);
    }
}
