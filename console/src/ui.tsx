/** Small pieces every page uses: loading data, showing an error, formatting times. */
import { useCallback, useEffect, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { ApiError } from "./api.js";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload`), keeping the last answer while the next one loads. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setLoading(true);
    load()
      .then((d) => current && (setData(d), setError(undefined)))
      .catch((e: unknown) => current && setError(e instanceof Error ? e : new Error(String(e))))
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data, error, loading, reload };
}

export function ErrorBox({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const key = error instanceof ApiError ? `${error.key}: ` : "";
  return (
    <p class="error" role="alert">
      {key}
      {error.message}
    </p>
  );
}

export function Page({
  title,
  children,
  actions,
}: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <section>
      <header class="page-head">
        <h1>{title}</h1>
        <div class="page-actions">{actions}</div>
      </header>
      {children}
    </section>
  );
}

export function time(value: string | number | undefined): string {
  if (value === undefined || value === "") return "";
  const d = new Date(typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

/** "3 min ago" for recent times, the date beyond a day. */
export function ago(epochMs: number | undefined, now = Date.now()): string {
  if (epochMs === undefined) return "not seen";
  const s = Math.max(0, Math.round((now - epochMs) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(epochMs).toLocaleDateString();
}

export function Loading({ when }: { when: boolean }) {
  return when ? (
    <p class="muted" aria-live="polite">
      Loading…
    </p>
  ) : null;
}
