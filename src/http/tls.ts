import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Logger } from "../observability/logger";

/** A certificate chain and its private key (PEM), read and checked by `readTlsCertificate`. */
export type TlsCertificate = {
  cert: string;
  key: string;
  /** For the log: what is served, never the key. */
  subject: string;
  fingerprint256: string;
  validTo: Date;
};

/** A certificate or key file that cannot be served; `file` says which of the two. */
export class TlsFileError extends Error {
  constructor(
    readonly file: "certificate" | "key",
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads a PEM certificate (chain) and its private key and checks that they belong together, so that a bad file is
 * one sentence naming the file at start-up or on reload — never a half-configured listener. Messages name the
 * path and the problem, never file content.
 */
export function readTlsCertificate(files: { certFile: string; keyFile: string }): TlsCertificate {
  const read = (file: "certificate" | "key", path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why =
        code === "ENOENT"
          ? "no such file"
          : code === "EACCES"
            ? "permission denied"
            : code === "EISDIR"
              ? "is a directory"
              : (e as Error).message;
      throw new TlsFileError(file, `cannot read ${path}: ${why}`);
    }
  };
  const cert = read("certificate", files.certFile);
  const key = read("key", files.keyFile);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new TlsFileError("certificate", `${files.certFile} holds no PEM certificate`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsFileError("key", `${files.keyFile} holds no PEM private key (unencrypted: PKCS #8, RSA or EC)`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new TlsFileError("key", `${files.keyFile} is not the private key of the certificate in ${files.certFile}`);
  }
  return { cert, key, subject: x509.subject, fingerprint256: x509.fingerprint256, validTo: x509.validToDate };
}

/** The setting that names the file a TlsFileError is about. */
export const tlsSetting = (e: TlsFileError) => (e.file === "certificate" ? "SERVER__TLS_CERT_FILE" : "SERVER__TLS_KEY_FILE");

/** What the log says about a certificate: whose it is and until when, never the key. */
export const describeCertificate = (tls: TlsCertificate) => ({
  subject: tls.subject.replaceAll("\n", ", "),
  fingerprint_sha256: tls.fingerprint256,
  valid_until: tls.validTo.toISOString(),
});

export function warnIfExpired(tls: TlsCertificate, now: number, log: Logger): void {
  if (tls.validTo.getTime() <= now)
    log.warn("the TLS certificate has expired: clients will refuse it until it is renewed", describeCertificate(tls));
}

/**
 * Reads SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE again and serves new connections with them; open ones keep
 * going (what SIGHUP does). False, the previous certificate still served and the reason logged, when it could not.
 */
export function reloadCertificate(
  server: { readonly stopping: boolean; replaceCertificate(tls: TlsCertificate): void },
  files: { certFile: string; keyFile: string } | undefined,
  { log, clock }: { log: Logger; clock: () => number },
): boolean {
  if (!files) {
    log.warn("no TLS certificate to reload: SERVER__TLS_CERT_FILE and SERVER__TLS_KEY_FILE are not set");
    return false;
  }
  // A server shutting down takes no new listener.
  if (server.stopping) return false;
  let next: TlsCertificate;
  try {
    next = readTlsCertificate(files);
    server.replaceCertificate(next);
  } catch (e) {
    log.error("TLS certificate not reloaded: still serving the previous one", {
      ...(e instanceof TlsFileError && { setting: tlsSetting(e) }),
      reason: (e as Error).message,
    });
    return false;
  }
  log.info("TLS certificate reloaded: new connections get it, open ones keep theirs", describeCertificate(next));
  warnIfExpired(next, clock(), log);
  return true;
}
