import { afterAll } from "bun:test";
import { stopSharedPostgres } from "./store";

// Preloaded by bunfig.toml: runs once, after the last test file of the process.
afterAll(stopSharedPostgres);
