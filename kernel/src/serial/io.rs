//! The console as the embedded ecosystem sees a serial port:
//! `embedded-io` for strands, `embedded-io-async` for tasks.

use super::{ReadError, read, read_async};
use crate::console;
use embedded_io::ErrorKind;
use roving::sync::WaitError;

/// The console's serial port, for code written against `embedded-io`
/// (`Read` blocks the strand) or `embedded-io-async` (`Read` is awaited).
///
/// Reads take bytes from the interrupt-driven input ring (see
/// [`serial`](super)): at least one, as the traits ask. Writes go to the
/// console as they are, with no line-end translation (send `\r\n` to a
/// terminal), and a write is never split by another core's output. They
/// wait for room in the UART, never for other work, so the async `write`
/// finishes in its first poll; `flush` has nothing to do, as a write
/// returns once its bytes are in the UART. (With feature `defmt` the
/// console carries defmt frames, and raw writes would garble them for the
/// decoder: write through `defmt` there.)
#[derive(Clone, Copy, Debug, Default)]
pub struct Serial;

impl embedded_io::Error for ReadError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::NoInput => ErrorKind::Unsupported,
            Self::Lost { .. } => ErrorKind::InvalidData,
            Self::Wait(WaitError::Interrupted) => ErrorKind::Interrupted,
            Self::Wait(_) => ErrorKind::Other,
        }
    }
}

impl embedded_io::ErrorType for Serial {
    type Error = ReadError;
}

impl embedded_io::Read for Serial {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        read(buf)
    }
}

impl embedded_io::Write for Serial {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ReadError> {
        console::write_bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), ReadError> {
        Ok(())
    }
}

impl embedded_io_async::Read for Serial {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        read_async(buf).await
    }
}

impl embedded_io_async::Write for Serial {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, ReadError> {
        console::write_bytes(buf);
        Ok(buf.len())
    }

    async fn flush(&mut self) -> Result<(), ReadError> {
        Ok(())
    }
}
