//! A sensor driver written for `embedded-hal` and `embedded-hal-async`,
//! run on roving from a strand and from async tasks spread over the cores.
//!
//! The device is a mock (`embedded-hal-mock`): an I2C temperature sensor
//! that must be told to convert, then given 10 ms before it is read. The
//! driver's delay is roving's `time::Delay`: the strand sleeps on the
//! pool's timers (its core runs other work), and each task awaits them.
//!
//! ```text
//! cargo run -p roving --example hal_driver --features std --target host-tuple
//! ```

use embedded_hal::delay::DelayNs;
use embedded_hal::i2c::I2c;
use embedded_hal_mock::eh1::i2c::{Mock, Transaction};
use roving::platform::host::Machine;
use roving::time::{Delay, Instant};
use roving::{Pool, executor, platform};

/// The sensor's bus address, its registers, and how long it converts.
const ADDRESS: u8 = 0x48;
const CONFIG: u8 = 0x01;
const ONE_SHOT: u8 = 0x80;
const TEMPERATURE: u8 = 0x00;
const CONVERSION_MS: u32 = 10;

/// The driver, blocking form: what a driver crate for `embedded-hal` 1.0
/// looks like. Temperatures in 1/256 °C.
struct Sensor<B, D> {
    bus: B,
    delay: D,
}

impl<B: I2c, D: DelayNs> Sensor<B, D> {
    fn read_temperature(&mut self) -> Result<i16, B::Error> {
        self.bus.write(ADDRESS, &[CONFIG, ONE_SHOT])?;
        self.delay.delay_ms(CONVERSION_MS);
        let mut raw = [0; 2];
        self.bus.write_read(ADDRESS, &[TEMPERATURE], &mut raw)?;
        Ok(i16::from_be_bytes(raw))
    }
}

/// The same driver for `embedded-hal-async`, as an embassy-style driver
/// crate writes it: unchanged on roving.
struct AsyncSensor<B, D> {
    bus: B,
    delay: D,
}

impl<B: embedded_hal_async::i2c::I2c, D: embedded_hal_async::delay::DelayNs> AsyncSensor<B, D> {
    async fn read_temperature(&mut self) -> Result<i16, B::Error> {
        self.bus.write(ADDRESS, &[CONFIG, ONE_SHOT]).await?;
        self.delay.delay_ms(CONVERSION_MS).await;
        let mut raw = [0; 2];
        self.bus.write_read(ADDRESS, &[TEMPERATURE], &mut raw).await?;
        Ok(i16::from_be_bytes(raw))
    }
}

/// A mock sensor that reads `celsius`, `reads` times.
fn mock_sensor(celsius: i16, reads: usize) -> Mock {
    let raw = (celsius * 256).to_be_bytes().to_vec();
    let one_read = [
        Transaction::write(ADDRESS, vec![CONFIG, ONE_SHOT]),
        Transaction::write_read(ADDRESS, vec![TEMPERATURE], raw),
    ];
    Mock::new(&one_read.iter().cycle().take(2 * reads).cloned().collect::<Vec<_>>())
}

fn main() {
    const SENSORS: i16 = 8;
    const READS: usize = 5;
    let cores = 4;
    Machine::new(cores)
        .expect("a host machine")
        .run(|| {
            let pool = Pool::new().expect("a pool of every core");
            pool.run(|| {
                // From a strand: the blocking driver; the strand sleeps.
                let mut sensor = Sensor { bus: mock_sensor(21, READS), delay: Delay };
                let started = Instant::now();
                for _ in 0..READS {
                    assert_eq!(sensor.read_temperature().expect("the bus answers"), 21 * 256);
                }
                let took = started.elapsed();
                assert!(took.as_millis() >= u128::from(CONVERSION_MS) * READS as u128);
                sensor.bus.done();
                println!("strand: {READS} readings of 21 °C in {} ms", took.as_millis());

                // From async tasks: one per sensor, over every core.
                let tasks: Vec<_> = (0..SENSORS)
                    .map(|n| {
                        executor::spawn_async(async move {
                            let mut sensor = AsyncSensor { bus: mock_sensor(20 + n, READS), delay: Delay };
                            let mut cores = Vec::new();
                            for _ in 0..READS {
                                let reading = sensor.read_temperature().await.expect("the bus answers");
                                assert_eq!(reading, (20 + n) * 256);
                                cores.push(platform::current_core().expect("a core of the pool"));
                            }
                            sensor.bus.done();
                            cores
                        })
                        .expect("a running pool takes tasks")
                    })
                    .collect();
                let mut polled_on = std::collections::BTreeSet::new();
                for (n, task) in tasks.into_iter().enumerate() {
                    let cores = task.join().expect("the driver task finishes");
                    println!("task {n}: {READS} readings of {} °C, on cores {cores:?}", 20 + n);
                    polled_on.extend(cores);
                }
                println!("{SENSORS} async drivers ran on {} of {cores} cores", polled_on.len());
            })
            .expect("the pool runs");
        })
        .expect("the machine runs");
}
