//! The system group.

use super::Node;
use crate::Error;

impl Node {
    // ------------------------------------------------------------ system

    /// The machine's BIOS serial number (system group).
    pub async fn bios_serial_number(&self) -> Result<String, Error> {
        self.bounded("bios_serial_number", self.system()?.bios_serial_number())
            .await
    }
}
