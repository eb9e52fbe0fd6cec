/* Request parsing and validation (server/request.c). Truth: OpenAI's API reference for the
 * fields, types and ranges (chat/create, completions/create), and its error shape: each bad body
 * must name the field at fault (param) with status 400; each good one must land in the struct
 * with the values written in the body. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/request.h"
#include "test_util.h"

static bool parse(rlx_srv_kind kind, const char *body, rlx_srv_request *r, rlx_srv_error *e) {
    return rlx_srv_request_parse(kind, body, strlen(body), r, e);
}

static void test_good_chat(void) {
    rlx_srv_request r;
    rlx_srv_error e;
    const char *body =
        "{\"model\":\"x\",\"messages\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},{\"type\":\"text\",\"text\":\"there\"}]},"
        "{\"role\":\"assistant\",\"content\":null}],"
        "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"repeat_penalty\":1.1,"
        "\"presence_penalty\":-0.5,\"frequency_penalty\":1.5,\"ignore_eos\":true,\"seed\":-7,\"max_completion_tokens\":"
        "12,"
        "\"stop\":[\"END\",\"\\n\\n\"],\"stream\":true,\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true},"
        "\"n\":1,\"user\":\"ignored\",\"logprobs\":false,\"tools\":[]}";
    bool ok = parse(RLX_SRV_CHAT, body, &r, &e);
    T_CHECK(ok, "a good chat request was refused: %s", e.message);
    if (ok) {
        T_CHECK(r.n_messages == 3, "messages: %zu, expected 3", r.n_messages);
        T_CHECK(!strcmp(r.messages[0].role, "system"), "developer reads as system: got %s", r.messages[0].role);
        T_CHECK(!strcmp(r.messages[1].content, "Hi there"), "text parts joined: '%s'", r.messages[1].content);
        T_CHECK(!strcmp(r.messages[2].content, ""), "assistant null content: '%s'", r.messages[2].content);
        T_CHECK(r.sample.temperature == 0.5f && r.sample.top_p == 0.9f && r.sample.top_k == 40 &&
                    r.sample.min_p == 0.05f && r.sample.repeat_penalty == 1.1f && r.sample.presence_penalty == -0.5f &&
                    r.sample.frequency_penalty == 1.5f,
                "sampling fields not as written");
        T_CHECK(r.sample.ignore_eos, "ignore_eos true not read");
        T_CHECK(r.seed_given && r.sample.seed == (uint64_t)-7, "seed -7: %llu", (unsigned long long)r.sample.seed);
        T_CHECK(r.max_tokens == 12, "max_completion_tokens 12: %d", r.max_tokens);
        T_CHECK(r.n_stop == 2 && !strcmp(r.stop[0], "END") && !strcmp(r.stop[1], "\n\n"), "stop strings");
        T_CHECK(r.stream && r.include_usage && r.continuous_usage, "stream flags");
    }
    rlx_srv_request_free(&r);
    /* OpenAI's defaults when nothing is given */
    ok = parse(RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r, &e);
    T_CHECK(ok && r.sample.temperature == 1.0f && r.sample.top_p == 1.0f && r.sample.top_k == 0 && !r.seed_given &&
                r.max_tokens == 0 && !r.stream && r.n_stop == 0,
            "defaults: temperature %g top_p %g", (double)r.sample.temperature, (double)r.sample.top_p);
    rlx_srv_request_free(&r);
}

static void test_good_completion(void) {
    rlx_srv_request r;
    rlx_srv_error e;
    T_CHECK(parse(RLX_SRV_COMPLETION, "{\"prompt\":\"Once\",\"stop\":\"x\",\"max_tokens\":3.0}", &r, &e) && r.prompt &&
                !strcmp(r.prompt, "Once") && r.n_stop == 1 && r.max_tokens == 3,
            "a string prompt, a single stop string, max_tokens 3.0");
    rlx_srv_request_free(&r);
    T_CHECK(parse(RLX_SRV_COMPLETION, "{\"prompt\":[1,2,3]}", &r, &e) && r.n_prompt_ids == 3 && r.prompt_ids[2] == 3,
            "a prompt of token ids");
    rlx_srv_request_free(&r);
    T_CHECK(parse(RLX_SRV_COMPLETION, "{\"prompt\":[[5,6]]}", &r, &e) && r.n_prompt_ids == 2 && r.prompt_ids[0] == 5,
            "a batch of one list of ids");
    rlx_srv_request_free(&r);
    T_CHECK(parse(RLX_SRV_COMPLETION, "{\"prompt\":[\"a\"]}", &r, &e) && r.prompt && !strcmp(r.prompt, "a"),
            "a batch of one string");
    rlx_srv_request_free(&r);
}

/* Bad bodies: each a 400 naming the field (param) the reference says is at fault. */
static void test_bad(void) {
    static const struct {
        rlx_srv_kind kind;
        const char *body, *param;
    } v[] = {
        {RLX_SRV_CHAT, "", ""},
        {RLX_SRV_CHAT, "{", ""},
        {RLX_SRV_CHAT, "[1]", ""},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"a\":1,\"a\":2}",
         ""}, /* duplicate key */
        {RLX_SRV_CHAT, "{\"messages\":\"hi\"}", "messages"},
        {RLX_SRV_CHAT, "{\"messages\":[]}", "messages"},
        {RLX_SRV_CHAT, "{}", "messages"},
        {RLX_SRV_CHAT, "{\"messages\":[1]}", "messages[0]"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "messages[0].role"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\"}]}", "messages[0].role"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":7}]}", "messages[0].content"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
         "messages[0].content"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", "temperature"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":2.5}", "temperature"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_p\":1.5}", "top_p"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":-1}", "top_k"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"presence_penalty\":3}",
         "presence_penalty"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", "max_tokens"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1.5}", "max_tokens"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":1e300}", "max_tokens"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}", "n"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}", "logprobs"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{}]}", "tools"},
        {RLX_SRV_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":\"json_object\"}}",
         "response_format"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":\"\"}", "stop"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[1]}", "stop"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}", "stream"},
        {RLX_SRV_CHAT,
         "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream_options\":{\"include_usage\":1}}",
         "stream_options.include_usage"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":5}", "model"},
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"\\u0000\"}]}", ""},  /* NUL: jansson refuses */
        {RLX_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xC3\x28\"}]}", ""}, /* invalid UTF-8 */
        {RLX_SRV_COMPLETION, "{}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":5}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":[]}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":[1,-2]}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":[1,\"a\"]}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}", "prompt"},
        {RLX_SRV_COMPLETION, "{\"prompt\":\"a\",\"echo\":true}", "echo"},
        {RLX_SRV_COMPLETION, "{\"prompt\":\"a\",\"suffix\":\"b\"}", "suffix"},
        {RLX_SRV_COMPLETION, "{\"prompt\":\"a\",\"best_of\":3}", "best_of"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        rlx_srv_request r;
        rlx_srv_error e;
        bool ok = parse(v[i].kind, v[i].body, &r, &e);
        T_CHECK(!ok, "bad body %zu (%s) was accepted", i, v[i].body);
        if (!ok) {
            T_CHECK(e.status == 400 && !strcmp(e.type, "invalid_request_error"), "bad body %zu: status %d type %s", i,
                    e.status, e.type);
            T_CHECK(!strcmp(e.param, v[i].param), "bad body %zu (%s): param '%s', expected '%s' (%s)", i, v[i].body,
                    e.param, v[i].param, e.message);
            T_CHECK(e.message[0] != '\0', "bad body %zu: no message", i);
        }
        rlx_srv_request_free(&r);
    }
    printf("request: %zu bad bodies, each a 400 naming its field\n", sizeof v / sizeof v[0]);
}

int main(void) {
    test_good_chat();
    test_good_completion();
    test_bad();
    return t_summary("test_server_request");
}
