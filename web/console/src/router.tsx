/** Path routing under /console: links are plain <a href>, clicks stay in the app (history API). */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

const listeners = new Set<() => void>();
const notify = () => {
  for (const l of listeners) l();
};
addEventListener('popstate', notify);

export const navigate = (to: string, replace = false): void => {
  const url = to.startsWith(BASE) ? to : `${BASE}${to.startsWith('/') ? '' : '/'}${to}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  notify();
};

/** The app path (after /console) and its query parameters; re-renders on navigation. */
export const useLocation = (): { path: string; params: URLSearchParams } => {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  return { path, params: new URLSearchParams(location.search) };
};

/** Replaces the query string of the current page (filters, pagination) without a new history entry. */
export const setParams = (params: Record<string, string | number | undefined>): void => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const qs = search.toString();
  history.replaceState(null, '', `${location.pathname}${qs ? `?${qs}` : ''}`);
  notify();
};

export const Link = (props: {
  to: string;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
}) => {
  const href = `${BASE}${props.to}`;
  return (
    <a
      href={href}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
};
