//! What a shared library exports, read from its ELF file: the defined,
//! default-visibility symbols of `.dynsym` and the DT_SONAME of `.dynamic`.
//! ELF64 little-endian only (the platforms xdal builds for).
use std::path::Path;

/// The dynamic linking face of a library.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Exports {
    pub soname: Option<String>,
    /// Sorted, unique.
    pub symbols: Vec<String>,
}

const SHT_DYNAMIC: u32 = 6;
const SHT_DYNSYM: u32 = 11;
const DT_NULL: u64 = 0;
const DT_SONAME: u64 = 14;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const STT_OBJECT: u8 = 1;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const STV_DEFAULT: u8 = 0;
const STV_PROTECTED: u8 = 3;

struct Section {
    kind: u32,
    offset: usize,
    size: usize,
    link: usize,
    entsize: usize,
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes(&self, at: usize, n: usize) -> Result<&[u8], String> {
        at.checked_add(n).and_then(|end| self.0.get(at..end)).ok_or_else(|| "truncated ELF file".to_string())
    }
    fn u16(&self, at: usize) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(at, 2)?.try_into().expect("2 bytes")))
    }
    fn u32(&self, at: usize) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(at, 4)?.try_into().expect("4 bytes")))
    }
    fn u64(&self, at: usize) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes(at, 8)?.try_into().expect("8 bytes")))
    }
    fn usize(&self, at: usize) -> Result<usize, String> {
        usize::try_from(self.u64(at)?).map_err(|_| "ELF offset out of range".to_string())
    }
    /// A NUL-terminated string at `at` within a string table section.
    fn string(&self, table: &Section, at: usize) -> Result<String, String> {
        let bytes = self.bytes(table.offset, table.size)?;
        let tail = bytes.get(at..).ok_or("string index out of range")?;
        let end = tail.iter().position(|&b| b == 0).ok_or("unterminated ELF string")?;
        Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
    }
}

/// Reads the exports of the library at `path`.
pub fn read(path: &Path) -> Result<Exports, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&data).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn parse(data: &[u8]) -> Result<Exports, String> {
    let r = Reader(data);
    if r.bytes(0, 4)? != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if r.bytes(4, 2)? != [2, 1] {
        return Err("only 64-bit little-endian ELF files are supported".into());
    }
    let shoff = r.usize(0x28)?;
    let shentsize = usize::from(r.u16(0x3a)?);
    let shnum = usize::from(r.u16(0x3c)?);
    let mut sections = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let at = shoff + i * shentsize;
        sections.push(Section {
            kind: r.u32(at + 4)?,
            offset: r.usize(at + 0x18)?,
            size: r.usize(at + 0x20)?,
            link: r.u32(at + 0x28)? as usize,
            entsize: r.usize(at + 0x38)?,
        });
    }
    let strtab_of = |s: &Section| sections.get(s.link).ok_or_else(|| "bad sh_link".to_string());
    let mut exports = Exports::default();
    for section in &sections {
        match section.kind {
            SHT_DYNSYM => {
                let strtab = strtab_of(section)?;
                let entsize = if section.entsize == 0 { 24 } else { section.entsize };
                for i in 1..section.size / entsize {
                    let at = section.offset + i * entsize;
                    let info = r.bytes(at + 4, 1)?[0];
                    let other = r.bytes(at + 5, 1)?[0];
                    let shndx = r.u16(at + 6)?;
                    let (bind, kind, vis) = (info >> 4, info & 0xf, other & 0x3);
                    let defined = shndx != 0;
                    let public = matches!(bind, STB_GLOBAL | STB_WEAK) && matches!(vis, STV_DEFAULT | STV_PROTECTED);
                    if defined && public && matches!(kind, STT_FUNC | STT_OBJECT | STT_GNU_IFUNC) {
                        exports.symbols.push(r.string(strtab, r.u32(at)? as usize)?);
                    }
                }
            }
            SHT_DYNAMIC => {
                let strtab = strtab_of(section)?;
                for i in 0..section.size / 16 {
                    let tag = r.u64(section.offset + i * 16)?;
                    if tag == DT_NULL {
                        break;
                    }
                    if tag == DT_SONAME {
                        let at = r.usize(section.offset + i * 16 + 8)?;
                        exports.soname = Some(r.string(strtab, at)?);
                    }
                }
            }
            _ => {}
        }
    }
    exports.symbols.sort();
    exports.symbols.dedup();
    Ok(exports)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rejects_what_is_not_elf64() {
        assert!(super::parse(b"#!/bin/sh\n").is_err());
        assert!(super::parse(b"\x7fELF\x01\x01").is_err());
    }

    #[test]
    fn reads_this_test_binary() {
        // The test executable is an ELF file of this platform (a PIE, so it
        // has a .dynamic section); reading it must not fail.
        let me = std::env::current_exe().unwrap();
        assert!(super::read(&me).is_ok());
    }
}
