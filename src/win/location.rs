//! `MSFT_Disk.Location` parsing, shared by the simulated
//! host and the HostProcess backend.

/// Parses a disk `Location` the way ListDiskLocations does:
/// `None` if the disk is omitted, else `(adapter, bus, target, lun)`.
pub fn parse_location(location: &str) -> Option<[String; 4]> {
    let pieces: Vec<&str> = location.split(':').collect();
    if pieces.len() < 5 {
        return None;
    }
    let mut out: [String; 4] = Default::default();
    let mut seen = false;
    for piece in pieces {
        let tokens: Vec<&str> = piece.trim_matches(' ').split(' ').collect();
        if tokens.len() != 2 {
            continue;
        }
        seen = true;
        let slot = match tokens[0] {
            "Adapter" => 0,
            "Bus" => 1,
            "Target" => 2,
            "LUN" => 3,
            _ => continue,
        };
        out[slot] = tokens[1].to_string();
    }
    seen.then_some(out)
}
