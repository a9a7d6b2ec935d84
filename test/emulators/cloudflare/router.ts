/** A handful of routes: method + path pattern with `:name` segments, no router library needed. */
import type { TokenRecord } from './auth.js';
import { CfErrors, type ResultInfo } from './envelope.js';
import type { EmulatorStore } from './store.js';

export interface RouteContext {
  method: string;
  /** The path below the API prefix, e.g. `/zones/abc`. */
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  token: TokenRecord;
  store: EmulatorStore;
}

export interface RouteResult {
  result: unknown;
  result_info?: ResultInfo;
}

export interface Route {
  method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  pattern: string;
  handler: (ctx: RouteContext) => RouteResult;
}

interface Compiled {
  route: Route;
  regex: RegExp;
  names: string[];
}

export class Router {
  private readonly compiled: Compiled[];

  constructor(routes: readonly Route[]) {
    this.compiled = routes.map((route) => {
      const names: string[] = [];
      const source = route.pattern
        .split('/')
        .map((seg) => {
          if (!seg.startsWith(':')) return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(seg.slice(1));
          return '([^/]+)';
        })
        .join('/');
      return { route, regex: new RegExp(`^${source}/?$`), names };
    });
  }

  /** The route for a request, or the real API's 404 (no such path) / 405 (path without that method). */
  match(method: string, path: string): { route: Route; params: Record<string, string> } {
    let pathMatched = false;
    for (const c of this.compiled) {
      const m = c.regex.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (c.route.method !== method) continue;
      const params: Record<string, string> = {};
      c.names.forEach((name, i) => (params[name] = decodeURIComponent(m[i + 1] ?? '')));
      return { route: c.route, params };
    }
    throw pathMatched ? CfErrors.methodNotAllowed(method) : CfErrors.noRoute();
  }
}
