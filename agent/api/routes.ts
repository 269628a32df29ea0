// Routes registered once per path and method: every path registered here
// also answers other methods with the API's 405. The 405 handlers are added
// after all routes (refuseOtherMethods), because paths overlap (/loadbalancer/:lbId/haproxy
// and /loadbalancer/:objectId/:action): a request falls through to the next
// route that has its method before it is refused.
import type { RequestHandler, Router } from 'express';

type Method = 'get' | 'put' | 'post' | 'delete';

export class Routes {
  private readonly paths: string[] = [];

  constructor(readonly router: Router) {}

  private add(method: Method, path: string, handlers: RequestHandler[]): this {
    if (!this.paths.includes(path)) this.paths.push(path);
    this.router[method](path, ...handlers);
    return this;
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

  /** Answer every other method on the registered paths with `refuse`; call once, after the last route. */
  refuseOtherMethods(refuse: RequestHandler): void {
    this.router.all(this.paths, refuse);
  }
}
