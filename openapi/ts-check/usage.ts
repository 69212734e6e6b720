// Type-checked against the client types openapi-typescript generates from openapi.yaml (make ts-check):
// proves the contract usable for SDK generation and pins a few shapes clients rely on.
import type { components, paths, operations } from "./api";

type Schemas = components["schemas"];

export const problem: Schemas["Problem"] = { type: "about:blank", title: "Not Found", status: 404, detail: "no dataset" };

export function datasetTitle(d: Schemas["DatasetResponse"]): string {
  return d.title;
}

type HealthBody = paths["/health"]["get"]["responses"][200]["content"]["application/json"];
export const isHealthy = (h: HealthBody): boolean => h.status === "healthy";

type LoginOp = operations["login"];
export type LoginForm = NonNullable<LoginOp["requestBody"]>["content"]["application/x-www-form-urlencoded"];

export const token: Schemas["TokenResponse"] = { access_token: "a", refresh_token: null, token_type: "bearer", expires_in: 900 };
