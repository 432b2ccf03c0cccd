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

/** Return a list of problems with a formSchema value. */
export function checkFormSchema(schema) {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return ["formSchema: must be a JSON object"];
  const problems = [];
  if (!Array.isArray(schema.fields) || !schema.fields.length) return ["formSchema.fields: a non-empty list of fields"];
  const seen = new Set();
  schema.fields.forEach((f, i) => {
    const at = `formSchema.fields.${i}`;
    if (!f || typeof f !== "object") {
      problems.push(`${at}: must be an object`);
      return;
    }
    if (typeof f.name !== "string" || !f.name) problems.push(`${at}.name: required`);
    else if (seen.has(f.name)) problems.push(`${at}.name: "${f.name}" is used twice`);
    seen.add(f.name);
    if (typeof f.label !== "string" || !f.label) problems.push(`${at}.label: required`);
    if (!FIELD_TYPES.includes(f.type)) problems.push(`${at}.type: one of ${FIELD_TYPES.join(", ")}`);
    if ((f.type === "select" || f.type === "multiselect") && (!Array.isArray(f.options) || !f.options.length)) {
      problems.push(`${at}.options: a select needs a list of {label, value}`);
    }
  });
  return problems;
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
