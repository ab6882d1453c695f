//! Hash maps keyed by addresses, offsets and ids. The standard SipHash
//! guards against keys chosen by an attacker; these keys are chosen by the
//! allocator, and hashing them is on the allocation hot path, so a single
//! multiply does.
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: spreads aligned addresses over all bits.
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// A map keyed by an address, offset, length or id.
pub(crate) type AddrMap<K, V> = HashMap<K, V, BuildHasherDefault<AddrHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_keys_spread() {
        let mut map: AddrMap<usize, usize> = AddrMap::default();
        for i in 0..10_000 {
            map.insert(i * 256, i);
        }
        assert!((0..10_000).all(|i| map[&(i * 256)] == i));
        let buckets: std::collections::HashSet<u64> = (0..1024usize)
            .map(|i| {
                let mut h = AddrHasher::default();
                h.write_usize(i * 4096);
                h.finish() & 1023
            })
            .collect();
        assert!(buckets.len() > 500, "page-aligned keys must not collide in the low bits");
    }
}
