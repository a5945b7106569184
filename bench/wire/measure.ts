// A small benchmark harness for bench/wire.ts: medians of per-operation CPU time.
//
// CPU time (process.cpuUsage), not wall time: the machine is shared, and time spent descheduled
// while other processes run is not time the code took. Each sample is a batch long enough (~10 ms)
// for the microsecond clock; the median of the samples is reported.

export type Measurement = { name: string; medianUs: number; samples: number };

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** Median CPU microseconds per call of `fn`, after a warm-up, over `samples` batches. */
export function measure(name: string, fn: () => unknown, options: { samples?: number; batchMs?: number } = {}): Measurement {
  const samples = options.samples ?? 31;
  const batchUs = (options.batchMs ?? 10) * 1000;
  // Warm up (let the JIT settle) and size the batch.
  let iterations = 1;
  for (;;) {
    const start = cpuMicros();
    for (let i = 0; i < iterations; i++) fn();
    const elapsed = cpuMicros() - start;
    if (elapsed >= batchUs) break;
    iterations = elapsed <= 0 ? iterations * 8 : Math.max(iterations + 1, Math.ceil((iterations * batchUs) / elapsed));
  }
  // V8 tiers a hot function up (Sparkplug, Maglev, TurboFan) over the first few hundred
  // milliseconds; sampling before that reads an unsettled mix, which showed as runs a factor of two
  // apart. Keep calling for ~300 ms of CPU first.
  const warmUntil = cpuMicros() + 300_000;
  while (cpuMicros() < warmUntil) for (let i = 0; i < iterations; i++) fn();
  const perCall: number[] = [];
  for (let s = 0; s < samples; s++) {
    const start = cpuMicros();
    for (let i = 0; i < iterations; i++) fn();
    perCall.push((cpuMicros() - start) / iterations);
  }
  perCall.sort((a, b) => a - b);
  return { name, medianUs: perCall[Math.floor(samples / 2)]!, samples };
}
