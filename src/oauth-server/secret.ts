import { randomBytes } from "node:crypto";
import { sha256Hex } from "../secrets/digest";

/** A new code, token or consent page handle: 256 random bits. Only its digest is stored. */
export const newSecret = (prefix = "") => `${prefix}${randomBytes(32).toString("base64url")}`;
/** What the store keeps of a secret, and looks it up by. */
export const digest = sha256Hex;
