// The wire contract (SPEC §1): schemas, limits, canonical JSON, hashes and sizes, shared by the
// SDK and the worker. This file is the whole public surface of src/shared.
export * from "./agreement.ts";
export * from "./batch.ts";
export * from "./call.ts";
export * from "./canonical.ts";
export * from "./description.ts";
export * from "./fields.ts";
export * from "./hash.ts";
export * from "./limits.ts";
export * from "./payload.ts";
export * from "./porter.ts";
export * from "./sha256.ts";
export * from "./startup.ts";
export * from "./timestamp.ts";
