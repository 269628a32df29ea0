// Routes registered once per path: a path's methods and its 405 answer, in
// one express route. Paths overlap (/loadbalancer/:lbId/haproxy and
// /loadbalancer/:objectId/:action), and, as in Flask, a request goes to the
// route that has its path and its method wherever that route is registered;
// so a path's 405 handler answers only when no other registered path takes
// the request with its method, and otherwise passes it on.
import type { Request, RequestHandler, Router } from 'express';
import { match } from 'path-to-regexp';

type Method = 'get' | 'put' | 'post' | 'delete';

interface RegisteredPath {
  route: ReturnType<Router['route']>;
  /** Upper case, as req.method; GET also takes HEAD, as express does. */
  methods: Set<string>;
  /** The request path matches this route's, as the router matches it (strict, case-insensitive). */
  matches: (path: string) => boolean;
}

const takes = (p: RegisteredPath, method: string) => p.methods.has(method) || (method === 'HEAD' && p.methods.has('GET'));

export class Routes {
  private readonly paths = new Map<string, RegisteredPath>();

  /** `refuse` answers a known path with a method no route takes: the API's 405. */
  constructor(
    readonly router: Router,
    private readonly refuse: RequestHandler,
  ) {}

  private add(method: Method, path: string, handlers: RequestHandler[]): this {
    const registered = this.paths.get(path) ?? this.register(path);
    registered.methods.add(method.toUpperCase());
    registered.route[method](...handlers);
    return this;
  }

  private register(path: string): RegisteredPath {
    const matcher = match(path, { decode: false, end: true, trailing: false, sensitive: false });
    const registered: RegisteredPath = { route: this.router.route(path), methods: new Set(), matches: (p) => matcher(p) !== false };
    this.paths.set(path, registered);
    // First in the route's stack: it passes the path's own methods on to their handlers below it.
    registered.route.all((req, res, next) => (takes(registered, req.method) || this.takenElsewhere(registered, req) ? next() : this.refuse(req, res, next)));
    return registered;
  }

  private takenElsewhere(self: RegisteredPath, req: Request): boolean {
    for (const other of this.paths.values()) if (other !== self && takes(other, req.method) && other.matches(req.path)) return true;
    return false;
  }

  get(path: string, ...handlers: RequestHandler[]): this {
    return this.add('get', path, handlers);
  }

  put(path: string, ...handlers: RequestHandler[]): this {
    return this.add('put', path, handlers);
  }

  post(path: string, ...handlers: RequestHandler[]): this {
    return this.add('post', path, handlers);
  }

  delete(path: string, ...handlers: RequestHandler[]): this {
    return this.add('delete', path, handlers);
  }
}
