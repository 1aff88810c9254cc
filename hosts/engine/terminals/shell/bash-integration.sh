# ahpd's shell integration for bash, run as its --rcfile: the person's own ~/.bashrc first, as
# an interactive bash would read it, then the marks ahpd reads off the terminal's output and
# takes out of it: OSC 133 A (prompt starts), B (command line starts), C (command runs),
# D;<exit status> (command finished) and OSC 7 (the working directory).
if [ -f ~/.bashrc ]; then
    . ~/.bashrc
fi

if [ -z "${__ahpd_marks-}" ]; then
    __ahpd_marks=1

    __ahpd_precmd() {
        local status=$?
        printf '\033]133;D;%s\007\033]7;file://%s%s\007' "$status" "${HOSTNAME-}" "$PWD"
        return $status
    }

    # A prompt a theme rebuilds at every prompt loses its marks: they are put back each time.
    __ahpd_mark_prompt() {
        case "$PS1" in
            *'133;B'*) ;;
            *) PS1='\[\033]133;A\007\]'"$PS1"'\[\033]133;B\007\]' ;;
        esac
    }

    # Ours first, so it reads the command's status before anything else changes it.
    PROMPT_COMMAND="__ahpd_precmd${PROMPT_COMMAND:+; $PROMPT_COMMAND}; __ahpd_mark_prompt"
    PS0="${PS0-}"'\033]133;C\007'
fi
