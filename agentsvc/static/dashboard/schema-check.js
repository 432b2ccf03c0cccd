// Client-side checks of a tool's inputSchema and formSchema, before the API's own check
// (the API validates against the JSON Schema metaschema; its message is shown as well).

// JSON Schema's own simple types: the API checks schemas against the metaschema, which
// accepts these (alone or as a list), so the page refuses nothing the API would accept.
const PROPERTY_TYPES = ["string", "number", "integer", "boolean", "array", "object", "null"];
const validType = (t) => PROPERTY_TYPES.includes(t) || (Array.isArray(t) && t.length > 0 && t.every((x) => PROPERTY_TYPES.includes(x)) && new Set(t).size === t.length);
export const FIELD_TYPES = ["text", "email", "tel", "number", "textarea", "select", "multiselect", "date", "datetime", "file", "image"];

// The API's limits on a tenant schema (README, "Tools"): it never fetches a schema, so
// every reference is local (#...), and it nests at most 32 levels.
const REFERENCE_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef", "$id"];
export const MAX_SCHEMA_DEPTH = 32;

/** Problems of references and nesting, found without recursion (a schema may be deep). */
function referenceProblems(schema) {
  const stack = [[schema, [], 1]];
  while (stack.length) {
    const [node, path, depth] = stack.pop();
    if (depth > MAX_SCHEMA_DEPTH) return [`inputSchema: must not nest deeper than ${MAX_SCHEMA_DEPTH} levels`];
    for (const [key, value] of Object.entries(node)) {
      if (REFERENCE_KEYWORDS.includes(key) && typeof value === "string" && !value.startsWith("#")) {
        return [`inputSchema.${[...path, key].join(".")}: must be a local reference starting with # (schemas are never fetched)`];
      }
      if (value && typeof value === "object") stack.push([value, [...path, key], depth + 1]);
    }
  }
  return [];
}

/** Return a list of problems with an inputSchema value (empty when it looks right). */
export function checkInputSchema(schema) {
  const problems = [];
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) {
    return ["inputSchema: must be a JSON object"];
  }
  problems.push(...referenceProblems(schema));
  if (schema.type !== "object") problems.push('inputSchema.type: must be "object"');
  const props = schema.properties ?? {};
  if (typeof props !== "object" || Array.isArray(props)) {
    problems.push("inputSchema.properties: must be an object");
  } else {
    for (const [name, prop] of Object.entries(props)) {
      if (!prop || typeof prop !== "object" || Array.isArray(prop)) {
        problems.push(`inputSchema.properties.${name}: must be an object`);
        continue;
      }
      if (prop.type !== undefined && !validType(prop.type)) {
        problems.push(`inputSchema.properties.${name}.type: one of ${PROPERTY_TYPES.join(", ")}`);
      }
      if (prop.enum !== undefined && !Array.isArray(prop.enum)) {
        problems.push(`inputSchema.properties.${name}.enum: a list of allowed values`);
      }
      if (prop.description !== undefined && typeof prop.description !== "string") {
        problems.push(`inputSchema.properties.${name}.description: must be text`);
      }
    }
  }
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== "string")) {
      problems.push("inputSchema.required: a list of property names");
    } else {
      for (const name of schema.required) {
        if (props && typeof props === "object" && !(name in props)) {
          problems.push(`inputSchema.required: "${name}" is not a property`);
        }
      }
    }
  }
  return problems;
}

// The API's save-time rules of a form (services/tools/rules.py), with its words, so the
// builder shows a problem before saving, where it is.
const FIELD_KEYS = ["name", "label", "type", "validation", "options", "placeholder", "description"];
const FORM_KEYS = ["fields", "submitLabel", "successMessage", "title", "description"];
export const VALIDATION_RULES = { required: "boolean", minLength: "integer", maxLength: "integer", min: "number", max: "number", pattern: "string" };
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Whether a value is a JSON object (not null, not a list). */
export const isObject = (v) => Boolean(v) && typeof v === "object" && !Array.isArray(v);
const unknownKey = (value, allowed) => Object.keys(value).sort().find((k) => !allowed.includes(k));
const text = (v, max, required = true) => (typeof v !== "string" || (required && !v.trim()) ? "must be a non-empty string" : v.length > max ? `must be at most ${max} characters` : null);
const ofType = (v, kind) => (kind === "boolean" ? typeof v === "boolean" : kind === "string" ? typeof v === "string" : typeof v === "number" && Number.isFinite(v) && (kind === "number" || Number.isInteger(v)));

/** Why the service would refuse a pattern (RE2: no backreferences or lookaround), or null. */
export function patternProblem(pattern) {
  if (typeof pattern !== "string") return "must be a string";
  if (pattern.length > 1000) return "must be at most 1000 characters";
  if (/\(\?<?[=!]|\\[1-9]/.test(pattern)) return "is not a pattern the service can run; patterns use RE2 syntax: no backreferences or lookaround";
  try {
    // RE2 syntax JavaScript lacks (inline flags, (?P<name>), \A, \z) is tried without it.
    new RegExp(pattern.replace(/\(\?P</g, "(?<").replace(/\(\?[imsU-]+\)/g, "").replace(/\\[Az]/g, ""));
  } catch (err) {
    return `is not a pattern the service can run (${err.message.replace(/^Invalid regular expression: /, "")})`;
  }
  return null;
}

function validationProblems(at, rules) {
  if (!isObject(rules)) return [`${at}: must be an object of rules`];
  const out = [];
  for (const [rule, given] of Object.entries(rules)) {
    if (!(rule in VALIDATION_RULES)) {
      out.push(`${at}.${rule}: is not a rule (${Object.keys(VALIDATION_RULES).join(", ")})`);
      continue;
    }
    const spec = isObject(given) ? given : { value: given };
    if (!("value" in spec) || unknownKey(spec, ["value", "message"])) out.push(`${at}.${rule}: must be {value, message?}`);
    else if (!ofType(spec.value, VALIDATION_RULES[rule])) out.push(`${at}.${rule}.value: has the wrong type`);
    else if (rule === "pattern" && patternProblem(spec.value)) out.push(`${at}.pattern.value: ${patternProblem(spec.value)}`);
    if ("message" in spec && typeof spec.message !== "string") out.push(`${at}.${rule}.message: must be a string`);
  }
  return out;
}

function optionProblems(at, f) {
  const choice = f.type === "select" || f.type === "multiselect";
  if (!choice) return f.options === undefined || f.options === null ? [] : [`${at}.options: only select and multiselect fields have options`];
  if (!Array.isArray(f.options) || !f.options.length) return [`${at}.options: a ${f.type} field needs a list of options`];
  const out = [];
  const seen = new Set();
  f.options.forEach((o, j) => {
    const spot = `${at}.options.${j}`;
    if (!isObject(o) || Object.keys(o).length !== 2 || !("label" in o) || !("value" in o)) return out.push(`${spot}: must be {label, value}`);
    const bad = text(o.label, 500);
    if (bad) out.push(`${spot}.label: ${bad}`);
    if (!(typeof o.value === "string" || (typeof o.value === "number" && Number.isFinite(o.value)))) out.push(`${spot}.value: must be a string or a number`);
    else if (seen.has(o.value)) out.push(`${spot}.value: repeats another option's value`);
    seen.add(o.value);
  });
  return out;
}

function fieldProblems(at, f) {
  if (!isObject(f)) return [`${at}: must be an object`];
  const extra = unknownKey(f, FIELD_KEYS);
  if (extra) return [`${at}.${extra}: is not a known field`];
  const out = [];
  if (typeof f.name !== "string" || !FIELD_NAME.test(f.name)) out.push(`${at}.name: must be letters, digits and _ (starting with a letter or _)`);
  const label = text(f.label, 500);
  if (label) out.push(`${at}.label: ${label}`);
  if (!FIELD_TYPES.includes(f.type)) return [...out, `${at}.type: must be one of ${FIELD_TYPES.join(", ")}`];
  for (const key of ["placeholder", "description"]) {
    const bad = key in f ? text(f[key], 1000, false) : null;
    if (bad) out.push(`${at}.${key}: ${bad}`);
  }
  if ("validation" in f) out.push(...validationProblems(`${at}.validation`, f.validation));
  return [...out, ...optionProblems(at, f)];
}

/** Return a list of problems with a formSchema value, in the API's words. */
export function checkFormSchema(schema) {
  if (!isObject(schema)) return ["formSchema: must be an object with a fields list"];
  const extra = unknownKey(schema, FORM_KEYS);
  if (extra) return [`formSchema.${extra}: is not a known field`];
  if (!Array.isArray(schema.fields) || !schema.fields.length || schema.fields.length > 50) return ["formSchema.fields: must be a list of 1 to 50 fields"];
  const problems = schema.fields.flatMap((f, i) => fieldProblems(`formSchema.fields.${i}`, f));
  schema.fields.forEach((f, i) => {
    if (isObject(f) && schema.fields.slice(0, i).some((g) => isObject(g) && g.name === f.name)) problems.push(`formSchema.fields.${i}.name: "${f.name}" is used by another field`);
  });
  for (const key of ["submitLabel", "successMessage", "title", "description"]) {
    const bad = key in schema ? text(schema[key], 1000) : null;
    if (bad) problems.push(`formSchema.${key}: ${bad}`);
  }
  return problems;
}

const ACTION_KEYS = { webhook: ["type", "url", "webhookUrl", "headers", "payload"], team_chat: ["type", "webhookUrl", "messageTemplate", "message"], email: ["type", "recipientIds", "subject"] };
const httpUrl = (v) => typeof v === "string" && /^https?:\/\/[^\s/]+/i.test(v.trim());

/** Return a list of problems with formPostActions (null: none), in the API's words. */
export function checkPostActions(actions) {
  if (actions === null || actions === undefined) return [];
  if (!Array.isArray(actions) || actions.length > 10) return ["formPostActions: must be a list of at most 10 actions"];
  return actions.flatMap((a, i) => {
    const at = `formPostActions.${i}`;
    if (!isObject(a)) return [`${at}: must be an object`];
    if (!(a.type in ACTION_KEYS)) return [`${at}.type: must be webhook, team_chat or email`];
    const extra = unknownKey(a, ACTION_KEYS[a.type]);
    if (extra) return [`${at}.${extra}: is not a field of a ${a.type} action`];
    const out = [];
    if (a.type === "email") {
      if (!Array.isArray(a.recipientIds) || !a.recipientIds.length || a.recipientIds.some((r) => typeof r !== "string")) out.push(`${at}.recipientIds: must be a non-empty list of user ids`);
    } else {
      const key = a.type === "webhook" && "url" in a ? "url" : "webhookUrl";
      if (!httpUrl(a[key])) out.push(`${at}.${key}: must be an http or https URL`);
    }
    if (a.type === "team_chat") {
      const key = "message" in a ? "message" : "messageTemplate";
      const bad = text(a[key], 4000);
      if (bad) out.push(`${at}.${key}: ${bad}`);
    }
    if (a.headers !== undefined && (!isObject(a.headers) || Object.values(a.headers).some((v) => typeof v !== "string"))) out.push(`${at}.headers: must be an object of at most 50 string values`);
    if (a.payload !== undefined && !isObject(a.payload)) out.push(`${at}.payload: must be an object`);
    return out;
  });
}

export const DISPLAY_TYPES = ["text", "product_card", "product_carousel", "image", "table", "buttons", "form", "custom"];

/** Return a list of problems with a displayConfig (null: the default), in the API's words. */
export function checkDisplayConfig(config) {
  if (config === null || config === undefined) return [];
  if (!isObject(config)) return ["displayConfig: must be an object"];
  const extra = unknownKey(config, ["type", "fieldMappings", "options"]);
  if (extra) return [`displayConfig.${extra}: is not a known field`];
  const out = [];
  if ("type" in config && !DISPLAY_TYPES.includes(config.type)) out.push(`displayConfig.type: must be one of ${DISPLAY_TYPES.join(", ")}`);
  if ("fieldMappings" in config && (!isObject(config.fieldMappings) || Object.values(config.fieldMappings).some((v) => typeof v !== "string"))) out.push("displayConfig.fieldMappings: must be an object of field names (strings)");
  if ("options" in config && (!isObject(config.options) || Object.values(config.options).some((v) => typeof v !== "boolean"))) out.push("displayConfig.options: must be an object of booleans");
  return out;
}

/** An example input built from a schema, for the test-run box. */
export function exampleInput(schema) {
  const out = {};
  const props = (schema && schema.properties) || {};
  for (const [name, prop] of Object.entries(props)) {
    if (Array.isArray(prop.enum) && prop.enum.length) out[name] = prop.enum[0];
    else if (prop.type === "number" || prop.type === "integer") out[name] = 1;
    else if (prop.type === "boolean") out[name] = true;
    else if (prop.type === "array") out[name] = [];
    else if (prop.type === "object") out[name] = {};
    else out[name] = "example";
  }
  return out;
}
