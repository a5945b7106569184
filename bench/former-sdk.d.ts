// bench/sdk-own.ts imports the SDK as it was at the base commit under these names; bench/sdk.ts
// resolves them to that tree (or to this one when there is no base). Same surface as this tree's.
declare module "former-sdk/index" {
  export const watch: typeof import("../src/sdk/index.ts").watch;
}
declare module "former-sdk/destination" {
  export const setTransportOverridesForTests: typeof import("../src/sdk/destination.ts").setTransportOverridesForTests;
}
