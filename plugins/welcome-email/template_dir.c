/*
 * template_dir.c - the default paths of the welcome templates, the one
 * thing the build-tree and the installed welcome_email.so differ in
 * (WELCOME_TEMPLATE_DIR: the source tree's etc/templates, or the installed
 * templates folder; see CMakeLists.txt).
 */
#include "welcome.h"

#ifndef WELCOME_TEMPLATE_DIR
#error "WELCOME_TEMPLATE_DIR must name the folder of welcome.txt and welcome.html"
#endif

const char welcome_default_text[] = WELCOME_TEMPLATE_DIR "/welcome.txt";
const char welcome_default_html[] = WELCOME_TEMPLATE_DIR "/welcome.html";
