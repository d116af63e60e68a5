// Verifies a Sigstore bundle attached to an OCI artifact as `cosign verify --key KEY
// --insecure-ignore-tlog=true` does, with Sigstore's own JavaScript libraries instead of
// Evo's code: the bundle reads as protobuf JSON (and holds nothing the schema does not
// know: cosign's Go reader refuses unknown fields), its DSSE envelope's signature
// verifies with the key, without a transparency-log entry or a timestamp, and its in-toto
// statement's subject is the artifact's digest (cosign's claim check).
//
// Usage: node verify.js BUNDLE.json KEY.pub sha256:HEX
// Prints {"hint":…, "predicateType":…} and exits 0 when it verifies; throws otherwise.
'use strict';
const assert = require('assert');
const crypto = require('crypto');
const fs = require('fs');
const { bundleFromJSON, bundleToJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');

const [bundlePath, keyPath, digest] = process.argv.slice(2);
if (!digest) {
  console.error('usage: node verify.js BUNDLE.json KEY.pub sha256:HEX');
  process.exit(2);
}
const json = JSON.parse(fs.readFileSync(bundlePath, 'utf8'));
const bundle = bundleFromJSON(json);
assert.deepStrictEqual(bundleToJSON(bundle), json, 'the bundle holds fields the protobuf schema does not know');

const key = crypto.createPublicKey(fs.readFileSync(keyPath));
const root = {
  mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
  tlogs: [],
  certificateAuthorities: [],
  ctlogs: [],
  timestampAuthorities: [],
};
const trust = toTrustMaterial(root, () => ({ publicKey: key, validFor: () => true }));
new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 }).verify(toSignedEntity(bundle));

const statement = JSON.parse(Buffer.from(bundle.content.dsseEnvelope.payload).toString('utf8'));
const [algorithm, hex] = digest.split(':');
assert.ok(
  statement.subject.some((s) => s.digest && s.digest[algorithm] === hex),
  `the statement's subjects ${JSON.stringify(statement.subject)} do not include ${digest}`,
);
// Sigstore's clients hint at the key with base64 of SHA-256 of its DER.
const der = key.export({ type: 'spki', format: 'der' });
assert.strictEqual(json.verificationMaterial.publicKey.hint, crypto.createHash('sha256').update(der).digest('base64'));
console.log(JSON.stringify({ hint: json.verificationMaterial.publicKey.hint, predicateType: statement.predicateType }));
