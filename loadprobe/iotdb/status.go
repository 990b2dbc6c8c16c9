package iotdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iotdb-client-go/client"
)

// StatusCodesRelease is the IoTDB release whose TSStatusCode list
// (org.apache.iotdb.rpc.TSStatusCode in service-rpc-2.0.10.jar) the codes
// below are taken from. Codes move between releases (2.0 renumbered many
// of 1.x's), so an explanation given for another server version says so.
const StatusCodesRelease = "2.0.10"

// StatusExplanation is what one IoTDB status code means for the probe: its
// name in TSStatusCode, the likely cause and the fix, one line each.
// The table's fixes name settings by placeholder ({database}, {login});
// a run fills them with its own names (Config.name, loginFix) and
// ExplainStatus with the library's defaults (SettingName).
type StatusExplanation struct {
	Code  int32  `json:"code"`
	Name  string `json:"name"`
	Cause string `json:"cause"`
	Fix   string `json:"fix"`
}

// statusExplanations are the codes the probe explains (IoTDB 2.0.10),
// by code. A setting in a fix is a placeholder (statusFix fills it):
// {database} the existing-database setting, {login} the user and
// password settings (loginFix).
var statusExplanations = byCode([]StatusExplanation{
	{500, "DATABASE_NOT_EXIST", "the database named does not exist on this server",
		"create it (CREATE DATABASE root.x) or name an existing one with {database} (SHOW DATABASES lists them)"},
	{606, "WRITE_PROCESS_REJECT", "the DataNode rejects writes: its write memory is used up (flushes are behind)",
		"raise the DataNode's memory (MEMORY_SIZE in datanode-env.sh) or lower the load"},
	{600, "SYSTEM_READ_ONLY", "the DataNode is read-only (disk full or an internal error switched it)",
		"free disk space on the DataNode and check its log; SET SYSTEM TO RUNNING once fixed"},
	{709, "MPP_MEMORY_NOT_ENOUGH", "the DataNode has no query memory left for this query",
		"raise the DataNode's memory (MEMORY_SIZE in datanode-env.sh) or run fewer concurrent readers"},
	{719, "QUERY_EXECUTION_MEMORY_NOT_ENOUGH", "the DataNode ran out of memory for executing the statement (seen on small DataNodes)",
		"raise the DataNode's memory (MEMORY_SIZE, and the direct memory, in datanode-env.sh) or lower the load"},
	{717, "TOO_MANY_CONCURRENT_QUERIES_ERROR", "more concurrent queries than the DataNode allows",
		"raise max_allowed_concurrent_queries in iotdb-system.properties or run fewer readers"},
	{801, "WRONG_LOGIN_PASSWORD", "the user or password was refused",
		"check {login}"},
	{803, "NO_PERMISSION", "the user lacks a privilege this statement needs: MANAGE_DATABASE to create a database, WRITE_SCHEMA to create series, WRITE_DATA to write, READ_DATA to read",
		"grant the privilege on the probe's path (GRANT WRITE_SCHEMA, WRITE_DATA, READ_DATA ON root.x.** TO USER u, and MANAGE_DATABASE for a database of its own without {database}), or run as a user that has them"},
	{811, "NOT_HAS_PRIVILEGE", "the user lacks a privilege this statement needs",
		"grant the privilege (GRANT WRITE_SCHEMA, WRITE_DATA ON root.x.** TO USER u), or use {database} with a database the user may write to"},
	{906, "NO_AVAILABLE_REGION_GROUP", "no schema or data region could be created: the DataNode's memory for a new region is used up (in its log: direct buffer memory for a new schema region exceeds its limit)",
		"use {database} to write under an existing database (no new region needed), or raise the DataNode's memory / delete unused databases"},
})

// byCode indexes explanations by their Code.
func byCode(explanations []StatusExplanation) map[int32]StatusExplanation {
	m := make(map[int32]StatusExplanation, len(explanations))
	for _, e := range explanations {
		m[e.Code] = e
	}
	return m
}

// ExplainStatus returns the explanation of an IoTDB status code, its fix
// naming settings by the library's defaults (SettingName), and whether
// the probe knows it.
func ExplainStatus(code int32) (StatusExplanation, bool) {
	return (&Config{}).explainStatus(code)
}

// explainStatus is ExplainStatus with the fix naming c's settings
// (Config.name).
func (c *Config) explainStatus(code int32) (StatusExplanation, bool) {
	e, ok := statusExplanations[code]
	if ok {
		e.Fix = strings.NewReplacer("{database}", c.name("database"), "{login}", loginFix(c)).Replace(e.Fix)
	}
	return e, ok
}

// statusCode is the TSStatus code carried by err (0 when err is no status
// error).
func statusCode(err error) int32 {
	var ee *client.ExecutionError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 0
}

// explain is " — NAME: cause; fix: fix" for an error carrying a known
// status code, "" otherwise; the fix names c's settings (explainStatus),
// and serverVersion names a release other than StatusCodesRelease in the
// line.
func (c *Config) explain(err error, serverVersion string) string {
	e, ok := c.explainStatus(statusCode(err))
	if !ok {
		return ""
	}
	return " — " + e.line(serverVersion)
}

// line is the one-line explanation.
func (e StatusExplanation) line(serverVersion string) string {
	return fmt.Sprintf("status %d %s: %s; fix: %s%s", e.Code, e.Name, e.Cause, e.Fix, versionCaveat(serverVersion))
}
