import { expect, test } from "bun:test";
import { assertSecureUrl } from "../../src/oauth-client/http";
import { UnsafeUrl } from "../../src/http/fetch";

test("server-chosen URLs must be https, except loopback while private networks are allowed", () => {
  for (const ok of [
    "https://as.example/token",
    "http://127.0.0.1:9000/token",
    "http://localhost:8080/authorize",
    "http://[::1]:80/x",
  ]) {
    expect(() => assertSecureUrl(new URL(ok), false)).not.toThrow();
  }
  for (const bad of ["http://as.example/token", "http://10.0.0.5/token", "ftp://as.example/"]) {
    expect(() => assertSecureUrl(new URL(bad), false)).toThrow(UnsafeUrl);
  }
  expect(() => assertSecureUrl(new URL("http://127.0.0.1:9000/token"), true)).toThrow(UnsafeUrl);
  expect(() => assertSecureUrl(new URL("https://as.example/token"), true)).not.toThrow();
});
