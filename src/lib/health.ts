export interface DependencyState {
  status: 'up' | 'down';
  latency_ms?: number;
  detail?: string;
}

/**
 * Resolves when the dependency is up. A check of another process (a data process) may resolve with
 * that process's own dependencies (a record of DependencyState by name), which are reported beside this one's: a name this process checks
 * itself keeps its own state unless the other one finds it down.
 */
type Check = () => Promise<unknown>;

/** Dependencies each role registers; /healthz and gRPC HealthService.Ping report all of them. */
export class HealthRegistry {
  private readonly checks = new Map<string, Check>();

  register(name: string, check: Check): void {
    this.checks.set(name, check);
  }

  async report(timeoutMs = 2_000): Promise<{ ok: boolean; dependencies: Record<string, DependencyState> }> {
    const reported: Record<string, DependencyState>[] = [];
    const entries = await Promise.all(
      [...this.checks].map(async ([name, check]): Promise<[string, DependencyState]> => {
        const started = performance.now();
        let timer: NodeJS.Timeout | undefined;
        try {
          const more = await Promise.race([
            check(),
            new Promise<never>((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
            }),
          ]);
          if (more && typeof more === 'object') reported.push(more as Record<string, DependencyState>);
          return [name, { status: 'up', latency_ms: Math.round((performance.now() - started) * 10) / 10 }];
        } catch (err) {
          return [name, { status: 'down', detail: err instanceof Error ? err.message : String(err) }];
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const dependencies: Record<string, DependencyState> = Object.fromEntries(entries);
    for (const other of reported) {
      for (const [name, state] of Object.entries(other)) {
        if (!dependencies[name] || state.status === 'down') dependencies[name] = state;
      }
    }
    return { ok: Object.values(dependencies).every((s) => s.status === 'up'), dependencies };
  }
}
