//! `wasi:config`: the configuration values granted to a skill (`[skill_config.NAME]`),
//! read by the component through every published version of the interface, since each
//! toolchain pins its own: `store@0.2.0-rc.1` (wasmtime's), `store@0.2.0-draft` (jco's
//! and componentize-js's), `store@0.2.0-draft-2024-09-27` (Spin's) and the first draft,
//! `runtime@0.2.0-draft`. They differ only in names; each reads the same values, and
//! none fails (the values are in memory). Their WIT is in `wit/wasi-config/`.

use std::collections::BTreeMap;

use wasmtime::component::{HasData, Linker};

/// A store's state that holds the call's configuration values.
pub(super) trait HasConfig: 'static {
    /// The values the call was granted.
    fn config_values(&mut self) -> &BTreeMap<String, String>;
}

/// Every `wasi:config` interface Evo provides, for the message that names what a
/// component imports and Evo lacks.
pub(crate) const PROVIDED: &[&str] = &[
    "wasi:config/store@0.2.0-rc.1",
    "wasi:config/store@0.2.0-draft",
    "wasi:config/store@0.2.0-draft-2024-09-27",
    "wasi:config/runtime@0.2.0-draft",
];

mod rc1 {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/rc1",
        world: "imports",
        imports: { default: trappable },
    });
}

mod draft {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/draft",
        world: "imports",
        imports: { default: trappable },
    });
}

mod spin {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/draft-2024-09-27",
        world: "imports",
        imports: { default: trappable },
    });
}

mod first {
    wasmtime::component::bindgen!({
        path: "wit/wasi-config/runtime-draft",
        world: "imports",
        imports: { default: trappable },
    });
}

/// One call's values, as every version reads them.
pub(super) struct Values<'a>(&'a BTreeMap<String, String>);

/// The [`HasData`] of [`Values`].
struct HasValues;

impl HasData for HasValues {
    type Data<'a> = Values<'a>;
}

macro_rules! host {
    ($interface:path, $error:ident) => {
        impl $interface for Values<'_> {
            fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, $error>> {
                Ok(Ok(self.0.get(&key).cloned()))
            }

            fn get_all(&mut self) -> wasmtime::Result<Result<Vec<(String, String)>, $error>> {
                Ok(Ok(self
                    .0
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()))
            }
        }
    };
}

use draft::wasi::config::store::Error as DraftError;
use first::wasi::config::runtime::ConfigError as FirstError;
use rc1::wasi::config::store::Error as Rc1Error;
use spin::wasi::config::store::Error as SpinError;

host!(rc1::wasi::config::store::Host, Rc1Error);
host!(draft::wasi::config::store::Host, DraftError);
host!(spin::wasi::config::store::Host, SpinError);
host!(first::wasi::config::runtime::Host, FirstError);

/// Adds every version in [`PROVIDED`] to `linker`, each reading the call's granted
/// values.
pub(super) fn add_to_linker<T: HasConfig>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    fn values<T: HasConfig>(state: &mut T) -> Values<'_> {
        Values(state.config_values())
    }
    rc1::wasi::config::store::add_to_linker::<T, HasValues>(linker, values::<T>)?;
    draft::wasi::config::store::add_to_linker::<T, HasValues>(linker, values::<T>)?;
    spin::wasi::config::store::add_to_linker::<T, HasValues>(linker, values::<T>)?;
    first::wasi::config::runtime::add_to_linker::<T, HasValues>(linker, values::<T>)?;
    Ok(())
}
