/** Runs a command's function in this process, keeping what it writes to `stream`: its exit code and its text. */
export async function captured(stream: "stdout" | "stderr", run: () => Promise<number>): Promise<{ code: number; text: string }> {
  const written: string[] = [];
  const target = process[stream];
  const write = target.write.bind(target);
  target.write = ((chunk: string) => (written.push(String(chunk)), true)) as typeof target.write;
  try {
    return { code: await run(), text: written.join("") };
  } finally {
    target.write = write;
  }
}
