//! The skills catalogue the nodes on one PostgreSQL database share (the `postgres`
//! feature): what another node installed is installed here, what it uninstalled goes.

use std::collections::BTreeMap;

use super::Host;
use crate::error::Result;
use crate::packages::InstallRecord;
use crate::packages::shared::SharedCatalogue;

impl Host {
    /// Brings the skills directory in line with the catalogue the nodes share: a
    /// package installed elsewhere is installed here (and its digest verified), one
    /// uninstalled elsewhere goes, and a skill this node had before it joined is
    /// published. The directory scan after it loads what changed.
    pub(super) async fn sync_shared(&self, shared: &SharedCatalogue) -> Result<()> {
        let heard = shared.heard();
        let installs = shared.installs()?;
        let root = crate::paths::skills_dir(&self.inner.data_dir);
        let mut local = BTreeMap::new();
        if root.is_dir() {
            for dir in crate::engine::skill_dirs(&root)? {
                if let Some(record) = InstallRecord::read(&dir) {
                    local.insert(record.name.clone(), record);
                }
            }
        }
        let mut seen = shared.seen()?;
        let manager = self.manager()?;
        let mut complete = true;
        for (name, digest) in &installs {
            seen.insert(name.clone());
            if local.get(name).is_some_and(|r| &r.digest == digest) || shared.refused(digest) {
                continue;
            }
            match self.materialise(&manager, shared, name, digest).await {
                Ok(()) => {}
                // Tried again at the next change or tick.
                Err(e) if e.is_transient() => {
                    tracing::warn!(skill = %name, "could not install the shared package yet: [{}] {e}", e.code());
                    complete = false;
                }
                // Not tried again: the same bytes would be refused the same way.
                Err(e) => {
                    tracing::warn!(skill = %name, digest = %digest, "refused the shared package: [{}] {e}", e.code());
                    shared.refuse(digest);
                }
            }
        }
        for (name, record) in &local {
            if installs.contains_key(name) {
                continue;
            }
            if seen.remove(name) {
                manager.uninstall_skill(name)?;
                tracing::info!(skill = %name, "uninstalled on another node");
            } else {
                shared.publish(record)?;
                seen.insert(name.clone());
                tracing::info!(skill = %name, "published to the shared catalogue");
            }
        }
        shared.save_seen(&seen)?;
        self.sync_grants(shared).await?;
        if complete {
            shared.synced(heard);
        }
        Ok(())
    }

    /// Brings each skill's own grants in line with what the nodes share: an entry
    /// another node changed is written here too (evo.toml and the policy now). One
    /// this node cannot take (a directory it does not have) is left as it was, with a
    /// warning.
    async fn sync_grants(&self, shared: &SharedCatalogue) -> Result<()> {
        // Who a refusal of the database's grants is logged as made by.
        const SHARED: &str = "shared storage";
        for (name, entry) in shared.grants()? {
            let policy = self.grants();
            let here = policy
                .skills
                .get(&name)
                .map(crate::capabilities::Policy::shown);
            if here == entry {
                continue;
            }
            let entry = match entry
                .as_ref()
                .map(crate::capabilities::Policy::from_shown)
                .transpose()
            {
                Ok(entry) => entry,
                Err(why) => {
                    tracing::warn!(skill = %name, "could not take the grants another node made: {why}");
                    continue;
                }
            };
            // A directory is bound here only below this node's own [serve] grant_dirs,
            // whoever wrote the row: the database does not widen what a node allows.
            let bound = super::grants::Operator {
                who: "a node".into(),
                dirs: Some(self.config().serve.grant_dirs.clone()),
            };
            let outside = entry
                .iter()
                .flat_map(|e| &e.dirs)
                .find_map(|d| super::grants::within(&d.host, &bound).err());
            if let Some(refusal) = outside {
                let values = entry.as_ref().map(crate::capabilities::Policy::shown);
                let arguments = serde_json::json!({ "skill": name, "entry": values });
                self.audit("skill_grant", SHARED, arguments, Err(&refusal));
                continue;
            }
            // Kept in this node's evo.toml too, for its next start; a file it cannot
            // write does not keep the change from applying now.
            if let Err(e) =
                crate::config::set_skill_grants(&self.config_path(), &name, entry.as_ref())
            {
                tracing::warn!(skill = %name, "the grants another node made apply, but could not be kept in evo.toml: {e}");
            }
            self.apply_entry(&name, entry, &policy).await;
            tracing::info!(target: "evo::security", skill = %name, "grants changed on another node");
        }
        Ok(())
    }

    /// Installs the shared package `digest` as `name`, refusing one that is not that
    /// skill with that digest.
    async fn materialise(
        &self,
        manager: &crate::packages::SkillManager,
        shared: &SharedCatalogue,
        name: &str,
        digest: &str,
    ) -> Result<()> {
        let expect = crate::packages::Expected { name, digest };
        // A skill installed from a registry is pulled from it by its manifest digest,
        // checked against this node's own trust; while the registry is unreachable,
        // the package the catalogue stores (the same digest) serves.
        let source = shared.source(name)?;
        if let Some(source) = &source {
            match self.materialise_pulled(manager, source, expect).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_transient() => {
                    tracing::warn!(skill = %name, "could not pull {} ({e}); installing the catalogue's copy", source.reference);
                }
                Err(e) => return Err(e),
            }
        }
        let zip = shared.package(digest)?;
        let options = crate::packages::InstallOptions {
            overwrite: true,
            // Checked before it replaces the installed version of any skill.
            expect: Some(expect),
            source,
            // Under the name the catalogue has it (the skill's own, or given `--as`).
            name: Some(name.to_owned()),
            ..Default::default()
        };
        manager.install_skill(&zip, options).await?;
        tracing::info!(skill = %name, digest = %digest, "installed from the shared catalogue");
        Ok(())
    }
}
